// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: redux_invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptx.redux.sync'
func.func @add_f32(%x: f32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' '.op' add is not valid with '.type' f32 (valid: min, max)
  %0 = ptx.redux.sync add f32 %x, %m : f32
  func.return
}

// -----

func.func @and_s32(%s: i32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' '.op' and is not valid with '.type' s32 (valid: add, min, max)
  %0 = ptx.redux.sync and s32 %s, %m : i32
  func.return
}

// -----

func.func @min_b32(%s: i32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' '.op' min is not valid with '.type' b32 (valid: and, or, xor)
  %0 = ptx.redux.sync min b32 %s, %m : i32
  func.return
}

// -----

func.func @abs_int(%s: i32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' '.abs' is only valid with '.type' f32, got '.type' s32
  %0 = ptx.redux.sync min abs s32 %s, %m : i32
  func.return
}

// -----

func.func @nan_int(%s: i32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' '.NaN' is only valid with '.type' f32, got '.type' u32
  %0 = ptx.redux.sync max NaN u32 %s, %m : i32
  func.return
}

// -----

func.func @f32_on_int_register(%s: i32, %m: i32) {
  // CHECK: error: 'ptx.redux.sync' operand 'src' must be f32, got i32
  %0 = ptx.redux.sync max f32 %s, %m : i32
  func.return
}

