// The element type of a grid-scope bulkred.reduce's dst (ops/tile/reduce.py,
// check_dst_element_type): src's, or a wider accumulator type: a float src into f32 or
// f64, an integer src into a wider integer of 32 or 64 bits for sum and prod (signless
// from any integer, unsigned only from an unsigned one). Below grid scope dst is src's.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: reduce_dst_type_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'dst' element type must be src's f32 or a wider accumulator type (f64), got f16
func.func @narrower_float(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<1xf16, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's f32 or a wider accumulator type (f64), got f16
  bulkred.reduce sum grid %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<1xf16, #bulkred.scope<global>>
  func.return
}

// -----

func.func @f64_has_no_wider(%a: memref<64xf64, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's f64 (kind sum of f64 has no wider accumulator type), got f32
  bulkred.reduce sum grid %a, %b : memref<64xf64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @float_into_integer(%a: memref<64xf16, #bulkred.scope<global>>, %b: memref<1xi64, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's f16 or a wider accumulator type (f32, f64), got i64
  bulkred.reduce max grid %a, %b : memref<64xf16, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @int_max_keeps_its_type(%a: memref<64xi32, #bulkred.scope<global>>, %b: memref<1xi64, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's i32 (kind max of i32 has no wider accumulator type), got i64
  bulkred.reduce max grid %a, %b : memref<64xi32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @signed_into_unsigned(%a: memref<64xi8, #bulkred.scope<global>>, %b: memref<1xui64, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's i8 or a wider accumulator type (i32, i64), got ui64
  bulkred.reduce sum grid %a, %b : memref<64xi8, #bulkred.scope<global>>, memref<1xui64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @narrower_int(%a: memref<64xi64, #bulkred.scope<global>>, %b: memref<1xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's i64 (kind sum of i64 has no wider accumulator type), got i32
  bulkred.reduce sum grid %a, %b : memref<64xi64, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @signedness_differs(%a: memref<64xui32, #bulkred.scope<global>>, %b: memref<1xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must be src's ui32 or a wider accumulator type (i64, ui64), got i32
  bulkred.reduce sum grid %a, %b : memref<64xui32, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// STDERR: reduce_dst_type_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'dst' element type must equal 'src' element type f16 below grid scope, got f32
func.func @wider_below_grid(%a: memref<1xf16, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32]>} {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must equal 'src' element type f16 below grid scope, got f32
  bulkred.reduce sum warp %a, %b : memref<1xf16, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @unsigned_below_grid(%a: memref<1xui8, #bulkred.scope<local>>, %b: memref<1xui8, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32]>} {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got ui8 (integers must be signless)
  bulkred.reduce sum warp %a, %b : memref<1xui8, #bulkred.scope<local>>, memref<1xui8, #bulkred.scope<local>>
  func.return
}

// -----

func.func @signed_at_grid(%a: memref<64xsi32, #bulkred.scope<global>>, %b: memref<1xsi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i8, i16, i32, i64, f16, bf16, f32, f64, ui8, ui16, ui32, ui64, i1, got si32 (integers must be signless or unsigned)
  bulkred.reduce sum grid %a, %b : memref<64xsi32, #bulkred.scope<global>>, memref<1xsi32, #bulkred.scope<global>>
  func.return
}
