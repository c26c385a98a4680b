// The local variant: a scalar loop per row, one ptx op per combining step.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s

// A 2-D source, accum: loop over rows around a loop over the reduced axis.
// CHECK-LABEL: func.func @rows_accum
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    scf.for %[[R:.*]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:      %[[FIRST:.*]] = memref.load %a[%[[R]], %[[C0]]] : memref<4x16xf32, #bulkred.scope<local>>
// CHECK-NEXT:      %[[ACC:.*]] = scf.for %[[I:.*]] = %[[C1]] to %[[C16]] step %[[C1]] iter_args(%[[A:.*]] = %[[FIRST]]) -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = memref.load %a[%[[R]], %[[I]]] : memref<4x16xf32, #bulkred.scope<local>>
// CHECK-NEXT:        %[[S:.*]] = ptx.add rn f32 %[[A]], %[[X]] : f32
// CHECK-NEXT:        scf.yield %[[S]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[OLD:.*]] = memref.load %b[%[[R]]] : memref<4xf32, #bulkred.scope<local>>
// CHECK-NEXT:      %[[NEW:.*]] = ptx.add rn f32 %[[OLD]], %[[ACC]] : f32
// CHECK-NEXT:      memref.store %[[NEW]], %b[%[[R]]] : memref<4xf32, #bulkred.scope<local>>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @rows_accum(%a: memref<4x16xf32, #bulkred.scope<local>>, %b: memref<4xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread accum %a, %b : memref<4x16xf32, #bulkred.scope<local>>, memref<4xf32, #bulkred.scope<local>>
  func.return
}

// -----

// Length 1: no loop, a copy of the single element.
// CHECK-LABEL: func.func @len1
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    memref.store %[[X]], %b[%[[C0]]]
// CHECK-NEXT:    func.return
func.func @len1(%a: memref<1xf64, #bulkred.scope<local>>, %b: memref<1xf64, #bulkred.scope<local>>) {
  bulkred.reduce max thread %a, %b : memref<1xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  func.return
}

// -----

// Element types and kinds: integers are signed for add/min/max, bN for bitwise;
// floats add and multiply with .rn and no .ftz; float max/min propagate NaN (.NaN; f64,
// whose max has no .NaN, selects a + b where setp.nan holds), not with ignore_nan;
// integer prod is mul.lo (wraps).
// CHECK-LABEL: func.func @types
// CHECK: ptx.add s32 {{.*}} : i32
// CHECK: ptx.add s64 {{.*}} : i64
// CHECK: ptx.min s32 {{.*}} : i32
// CHECK: ptx.max s64 {{.*}} : i64
// CHECK: ptx.and b32 {{.*}} : i32, i32
// CHECK: ptx.or b64 {{.*}} : i64, i64
// CHECK: ptx.xor b32 {{.*}} : i32, i32
// CHECK: ptx.add rn bf16 {{.*}} : bf16
// CHECK: ptx.max NaN f16 {{.*}} : f16
// CHECK: ptx.min f64 {{.*}} : f64
// CHECK-NEXT: ptx.setp nan f64
// CHECK-NEXT: ptx.add rn f64
// CHECK-NEXT: ptx.selp f64
// CHECK: ptx.mul.lo s32 {{.*}} : i32
// CHECK: ptx.mul rn f16 {{.*}} : f16
// CHECK: ptx.min f16 {{.*}} : f16
// CHECK: ptx.max f64 {{.*}} : f64
// CHECK-NOT: ptx.setp
// CHECK-NOT: ftz
// CHECK: func.return
func.func @types(%i32: memref<8xi32, #bulkred.scope<local>>, %i64: memref<8xi64, #bulkred.scope<local>>,
                 %o32: memref<1xi32, #bulkred.scope<local>>, %o64: memref<1xi64, #bulkred.scope<local>>,
                 %bf: memref<8xbf16, #bulkred.scope<local>>, %obf: memref<1xbf16, #bulkred.scope<local>>,
                 %h: memref<8xf16, #bulkred.scope<local>>, %oh: memref<1xf16, #bulkred.scope<local>>,
                 %d: memref<8xf64, #bulkred.scope<local>>, %od: memref<1xf64, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %i32, %o32 : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce sum thread %i64, %o64 : memref<8xi64, #bulkred.scope<local>>, memref<1xi64, #bulkred.scope<local>>
  bulkred.reduce min thread %i32, %o32 : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce max thread %i64, %o64 : memref<8xi64, #bulkred.scope<local>>, memref<1xi64, #bulkred.scope<local>>
  bulkred.reduce and thread %i32, %o32 : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce or thread %i64, %o64 : memref<8xi64, #bulkred.scope<local>>, memref<1xi64, #bulkred.scope<local>>
  bulkred.reduce xor thread %i32, %o32 : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce sum thread %bf, %obf : memref<8xbf16, #bulkred.scope<local>>, memref<1xbf16, #bulkred.scope<local>>
  bulkred.reduce max thread %h, %oh : memref<8xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.reduce min thread %d, %od : memref<8xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  bulkred.reduce prod thread %i32, %o32 : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce prod thread %h, %oh : memref<8xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.reduce min thread ignore_nan %h, %oh : memref<8xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.reduce max thread ignore_nan %d, %od : memref<8xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  func.return
}

// -----

// bulkred.copy: one loop per dimension.
// CHECK-LABEL: func.func @copy
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK:         scf.for %[[I:.*]] = %[[C0]] to %[[C2]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[C0]] to %[[C3]] step %[[C1]] {
// CHECK-NEXT:        %[[X:.*]] = memref.load %a[%[[I]], %[[J]]] : memref<2x3xi32, #bulkred.scope<global>>
// CHECK-NEXT:        memref.store %[[X]], %b[%[[I]], %[[J]]] : memref<2x3xi32, #bulkred.scope<local>>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @copy(%a: memref<2x3xi32, #bulkred.scope<global>>, %b: memref<2x3xi32, #bulkred.scope<local>>) {
  bulkred.copy %a, %b : memref<2x3xi32, #bulkred.scope<global>>, memref<2x3xi32, #bulkred.scope<local>>
  func.return
}
