// The bool kinds any and all (ops/tile/reduce.py, check_bool_kind): only on an i1 (bool) src,
// whose dst is i1 too; a sum of i1 needs a wider integer dst (a count is no bool).
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: reduce_bool_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'kind' any needs element type i1 (bool), got f32
func.func @any_of_float(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'kind' any needs element type i1 (bool), got f32
  bulkred.reduce any grid %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @all_of_int(%a: memref<8x64xi32, #bulkred.scope<global>>, %b: memref<8xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'kind' all needs element type i1 (bool), got i32
  bulkred.reduce all grid axes [1 : i64] %a, %b : memref<8x64xi32, #bulkred.scope<global>>, memref<8xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @any_into_int(%a: memref<64xi1, #bulkred.scope<global>>, %b: memref<1xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's i1 (kind any of i1 has no wider accumulator type), got i32
  bulkred.reduce any grid %a, %b : memref<64xi1, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @sum_of_bool_into_bool(%a: memref<64xi1, #bulkred.scope<global>>, %b: memref<1xi1, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type of a sum of i1 (bool) must be a wider integer (i32, i64, ui32, ui64), got i1
  bulkred.reduce sum grid %a, %b : memref<64xi1, #bulkred.scope<global>>, memref<1xi1, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bool_below_grid_scope(%a: memref<32xi1, #bulkred.scope<global>>, %b: memref<1xi1, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of
  bulkred.reduce any warp %a, %b : memref<32xi1, #bulkred.scope<global>>, memref<1xi1, #bulkred.scope<global>>
  func.return
}
