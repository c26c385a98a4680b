// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: warp_invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptx.shfl.sync'
func.func @f64_value(%x: f64, %i: i32) {
  // CHECK: error: 'ptx.shfl.sync' operand 'a' must be i32 or f32 (a .b32 register), got f64
  %0 = ptx.shfl.sync bfly %x, %i, %i, %i : f64
  func.return
}

// -----

func.func @i64_value(%x: i64, %i: i32) {
  // CHECK: error: 'ptx.shfl.sync' operand 'a' must be i32 or f32 (a .b32 register), got i64
  %0 = ptx.shfl.sync idx %x, %i, %i, %i : i64
  func.return
}

// -----

func.func @f16_value(%x: f16, %i: i32) {
  // CHECK: error: 'ptx.shfl.sync' operand 'a' must be i32 or f32 (a .b32 register), got f16
  %0 = ptx.shfl.sync up %x, %i, %i, %i : f16
  func.return
}

// -----

func.func @i64_mask(%x: f32, %i: i32, %m: i64) {
  // CHECK: error: 'ptx.shfl.sync' operand 'membermask' at position 3 does not verify: Expected attribute i32 but got i64
  %0 = "ptx.shfl.sync"(%x, %i, %i, %m) <{mode = #ptx<shfl_mode bfly>}> : (f32, i32, i32, i64) -> f32
  func.return
}

// -----

func.func @result_type(%x: f32, %i: i32) {
  // CHECK: error: 'ptx.shfl.sync' result 'd' at position 0 does not verify: attribute f32 expected from variable 'T', but got i32
  %0 = "ptx.shfl.sync"(%x, %i, %i, %i) <{mode = #ptx<shfl_mode bfly>}> : (f32, i32, i32, i32) -> i32
  func.return
}

// -----

func.func @bad_mode(%x: f32, %i: i32) {
  // CHECK: error: Expected `up`, `down`, `bfly`, or `idx`.
  %0 = ptx.shfl.sync xor %x, %i, %i, %i : f32
  func.return
}
