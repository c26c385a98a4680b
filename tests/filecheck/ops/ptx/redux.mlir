// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @redux_int
// GENERIC-LABEL: sym_name = "redux_int"
func.func @redux_int(%s: i32, %m: i32) {
  // CHECK: ptx.redux.sync add s32 %{{.*}}, %{{.*}} : i32
  // GENERIC: "ptx.redux.sync"(%{{.*}}, %{{.*}}) <{op = #ptx<redux_op add>, type = #ptx<redux_type s32>}> : (i32, i32) -> i32
  %0 = ptx.redux.sync add s32 %s, %m : i32
  // CHECK: ptx.redux.sync min u32
  %1 = ptx.redux.sync min u32 %s, %m : i32
  // CHECK: ptx.redux.sync max s32
  %2 = ptx.redux.sync max s32 %s, %m : i32
  // CHECK: ptx.redux.sync and b32
  %3 = ptx.redux.sync and b32 %s, %m : i32
  // CHECK: ptx.redux.sync or b32
  %4 = ptx.redux.sync or b32 %s, %m : i32
  // CHECK: ptx.redux.sync xor b32
  %5 = ptx.redux.sync xor b32 %s, %m : i32
  func.return
}

// CHECK-LABEL: func.func @redux_f32
func.func @redux_f32(%x: f32, %m: i32) {
  // CHECK: ptx.redux.sync min f32 %{{.*}}, %{{.*}} : f32
  %0 = ptx.redux.sync min f32 %x, %m : f32
  // CHECK: ptx.redux.sync max abs NaN f32
  // GENERIC: "ptx.redux.sync"(%{{.*}}, %{{.*}}) <{op = #ptx<redux_op max>, abs, NaN, type = #ptx<redux_type f32>}> : (f32, i32) -> f32
  %1 = ptx.redux.sync max abs NaN f32 %x, %m : f32
  // CHECK: ptx.redux.sync min NaN f32
  %2 = ptx.redux.sync min NaN f32 %x, %m : f32
  func.return
}
