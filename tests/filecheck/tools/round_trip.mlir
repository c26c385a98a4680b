// bulkred-opt's output parses back to the same module (issue 15, section 3). xDSL 0.74
// prints `scf.execute_region` without results without its terminator, and its parser
// adds none back; bulkred-opt's printer (cli.py, RoundTripPrinter) always prints it.
// RUN: bulkred-opt %s > %t.once.mlir
// RUN: bulkred-opt %t.once.mlir > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt > %t.generic.mlir
// RUN: diff %t.once.mlir %t.generic.mlir
// RUN: filecheck %s < %t.once.mlir

// CHECK-LABEL: func.func @execute_region_no_results
// CHECK:         scf.execute_region {
// CHECK-NEXT:      %{{.*}} = arith.constant 15 : i64
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
func.func @execute_region_no_results() {
  scf.execute_region {
    %0 = arith.constant 15 : i64
    scf.yield
  }
  func.return
}

// CHECK-LABEL: func.func @execute_region_blocks
// CHECK:         scf.execute_region {
// CHECK-NEXT:      cf.br ^[[BB:.*]]
// CHECK-NEXT:    ^[[BB]]:
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
func.func @execute_region_blocks() {
  scf.execute_region {
    cf.br ^bb1
  ^bb1:
    scf.yield
  }
  func.return
}

// Results: xDSL prints the terminators itself.
// CHECK-LABEL: func.func @execute_region_results
// CHECK:         scf.yield %{{.*}} : i64
func.func @execute_region_results() -> i64 {
  %r = scf.execute_region -> (i64) {
    %0 = arith.constant 15 : i64
    scf.yield %0 : i64
  }
  func.return %r : i64
}

// A declaration and prefetches with and without their optional clause.
// CHECK-LABEL: func.func private @declared(i32) -> ()
func.func private @declared(i32)

// CHECK-LABEL: func.func @prefetch
// CHECK:         ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %{{.*}}, %{{.*}} cachePolicy = %{{.*}}
// CHECK-NEXT:    ptx.cp.async.bulk.prefetch.L2.global %{{.*}}, %{{.*}}{{$}}
func.func @prefetch(%src: !ptx.ptr<global>, %size: i32, %p: i64) {
  ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %src, %size cachePolicy = %p
  ptx.cp.async.bulk.prefetch.L2.global %src, %size
  func.return
}
