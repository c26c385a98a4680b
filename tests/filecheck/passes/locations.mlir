// Every op that lower-tile-reductions, its variants and legalize-for-target create
// carries the location of the op it replaces, so that a later error points at the
// source line of the bulkred.reduce / bulkred.copy (or of the packed ptx op).
// RUN: bulkred-opt %s --split-input-file --print-debuginfo -p 'lower-tile-reductions{target=sm_100a}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-debuginfo -p 'lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a}' | filecheck %s --check-prefix=LEGAL
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_100a},check-target{target=sm_90a}' 2>&1 >/dev/null | filecheck %s --check-prefix=LATER

// sm100_packed, between two copies; then legalized for sm_90a.
// CHECK-LABEL: func.func @packed
// LEGAL-LABEL: func.func @packed
func.func @packed(%A: memref<16xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>) {
  %a = memref.alloca() : memref<16xf32, #bulkred.scope<local>>
  %b = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  // CHECK:       arith.constant 0 : index loc("{{.*}}locations.mlir":[[# @LINE + 5]]:3)
  // CHECK:       scf.for
  // CHECK-NEXT:    memref.load %{{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 3]]:3)
  // CHECK-NEXT:    memref.store %{{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 2]]:3)
  // CHECK-NEXT:  } loc("{{.*}}locations.mlir":[[# @LINE + 1]]:3)
  bulkred.copy %A, %a : memref<16xf32, #bulkred.scope<global>>, memref<16xf32, #bulkred.scope<local>>
  // CHECK:       memref.load %{{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 12]]:3)
  // CHECK:       ptx.mov.pack {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 11]]:3)
  // CHECK:       ptx.add.f32x2 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 10]]:3)
  // CHECK:       ptx.mov.unpack {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 9]]:3)
  // CHECK:       ptx.add rn f32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 8]]:3)
  // CHECK-NEXT:  memref.store %{{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 7]]:3)
  // LEGAL-NOT:   ptx.add.f32x2
  // LEGAL:       ptx.add rn ftz f32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 5]]:3)
  // LEGAL-NOT:   loc(unknown)
  // LEGAL:       ptx.add rn f32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 3]]:3)
  // A later pass's error on a generated op points at the bulkred.reduce:
  // LATER:       locations.mlir:[[# @LINE + 1]]:3: error: 'ptx.add.f32x2' 'add.rn.ftz.f32x2' needs sm_100 and PTX ISA 8.6, but the target is sm_90a
  bulkred.reduce sum thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK:       memref.store %{{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 1]]:3)
  bulkred.copy %b, %B : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  // CHECK-NOT:   loc(unknown)
  // CHECK:       func.return
  func.return
}

// -----

// local: every op of the row loop and of the combining loop; a packed ptx op
// legalized into two.
// CHECK-LABEL: func.func @local_rows
// LEGAL-LABEL: func.func @local_rows
func.func @local_rows(%a: memref<4x16xi32, #bulkred.scope<local>>, %b: memref<4xi32, #bulkred.scope<local>>,
                      %x: f32, %y: f32, %z: f32) {
  // CHECK:       arith.constant {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 10]]:3)
  // CHECK:       scf.for
  // CHECK-NEXT:    memref.load {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 8]]:3)
  // CHECK-NEXT:    scf.for
  // CHECK-NEXT:      memref.load {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 6]]:3)
  // CHECK-NEXT:      ptx.max s32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 5]]:3)
  // CHECK-NEXT:      scf.yield {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 4]]:3)
  // CHECK-NEXT:    } loc("{{.*}}locations.mlir":[[# @LINE + 3]]:3)
  // CHECK:         ptx.max s32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 2]]:3)
  // CHECK-NEXT:    memref.store {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 1]]:3)
  bulkred.reduce max thread accum %a, %b : memref<4x16xi32, #bulkred.scope<local>>, memref<4xi32, #bulkred.scope<local>>
  // LEGAL:       ptx.max f32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 3]]:3)
  // LEGAL-NEXT:  ptx.max f32 {{.*}} loc("{{.*}}locations.mlir":[[# @LINE + 2]]:3)
  // LATER:       locations.mlir:[[# @LINE + 1]]:3: error: 'ptx.max3'
  %m = ptx.max3 %x, %y, %z : f32
  func.return
}
