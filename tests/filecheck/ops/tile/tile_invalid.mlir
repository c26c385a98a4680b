// Every verifier rule of the tile-level bulkred dialect (ops/tile/), and the parse
// errors of its attributes, each with its exact message.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: tile_invalid.mlir:[[# @LINE + 4]]:3: error: 'bulkred.reduce' 'dst' shape must be [1] to reduce 'src' [32] along its last axis, got [2]
func.func @reduce_dst_shape_1d(%a: memref<32xf32, #bulkred.scope<local>>,
                               %b: memref<2xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' shape must be [1] to reduce 'src' [32] along its last axis, got [2]
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<2xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_dst_shape_2d(%a: memref<4x32xf32, #bulkred.scope<local>>,
                               %b: memref<32xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' shape must be [4] to reduce 'src' [4, 32] along its last axis, got [32]
  bulkred.reduce sum thread %a, %b : memref<4x32xf32, #bulkred.scope<local>>, memref<32xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_element_types_differ(%a: memref<32xf32, #bulkred.scope<local>>,
                                       %b: memref<1xf16, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' element type must equal 'src' element type f32 below grid scope, got f16
  bulkred.reduce max thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_and_on_float(%a: memref<32xf32, #bulkred.scope<local>>,
                               %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'kind' and needs an integer element type, got f32
  bulkred.reduce and thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_or_on_float(%a: memref<32xbf16, #bulkred.scope<local>>,
                              %b: memref<1xbf16, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'kind' or needs an integer element type, got bf16
  bulkred.reduce or warp %a, %b : memref<32xbf16, #bulkred.scope<local>>, memref<1xbf16, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_xor_on_float(%a: memref<32xf64, #bulkred.scope<local>>,
                               %b: memref<1xf64, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'kind' xor needs an integer element type, got f64
  bulkred.reduce xor thread %a, %b : memref<32xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_i1(%a: memref<32xi1, #bulkred.scope<local>>, %b: memref<1xi1, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got i1
  bulkred.reduce or thread %a, %b : memref<32xi1, #bulkred.scope<local>>, memref<1xi1, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_i8(%a: memref<32xi8, #bulkred.scope<local>>, %b: memref<1xi8, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got i8
  bulkred.reduce sum thread %a, %b : memref<32xi8, #bulkred.scope<local>>, memref<1xi8, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_i128(%a: memref<32xi128, #bulkred.scope<local>>, %b: memref<1xi128, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got i128
  bulkred.reduce max thread %a, %b : memref<32xi128, #bulkred.scope<local>>, memref<1xi128, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_si32(%a: memref<32xsi32, #bulkred.scope<local>>, %b: memref<1xsi32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got si32 (integers must be signless)
  bulkred.reduce sum thread %a, %b : memref<32xsi32, #bulkred.scope<local>>, memref<1xsi32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_ui32(%a: memref<32xui32, #bulkred.scope<local>>, %b: memref<1xui32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got ui32 (integers must be signless)
  bulkred.reduce max thread %a, %b : memref<32xui32, #bulkred.scope<local>>, memref<1xui32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_si16(%a: memref<32xsi16, #bulkred.scope<local>>, %b: memref<1xsi16, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got si16 (integers must be signless)
  bulkred.reduce xor thread %a, %b : memref<32xsi16, #bulkred.scope<local>>, memref<1xsi16, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_index(%a: memref<32xindex, #bulkred.scope<local>>, %b: memref<1xindex, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got index
  bulkred.reduce sum thread %a, %b : memref<32xindex, #bulkred.scope<local>>, memref<1xindex, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_f8(%a: memref<32xf8E4M3FN, #bulkred.scope<local>>, %b: memref<1xf8E4M3FN, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got f8E4M3FN
  bulkred.reduce max thread %a, %b : memref<32xf8E4M3FN, #bulkred.scope<local>>, memref<1xf8E4M3FN, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_tf32(%a: memref<32xtf32, #bulkred.scope<local>>, %b: memref<1xtf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got tf32
  bulkred.reduce sum thread %a, %b : memref<32xtf32, #bulkred.scope<local>>, memref<1xtf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_f80(%a: memref<32xf80, #bulkred.scope<local>>, %b: memref<1xf80, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got f80
  bulkred.reduce min thread %a, %b : memref<32xf80, #bulkred.scope<local>>, memref<1xf80, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_f128(%a: memref<32xf128, #bulkred.scope<local>>, %b: memref<1xf128, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got f128
  bulkred.reduce sum thread %a, %b : memref<32xf128, #bulkred.scope<local>>, memref<1xf128, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_complex(%a: memref<32xcomplex<f32>, #bulkred.scope<local>>, %b: memref<1xcomplex<f32>, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got complex<f32>
  bulkred.reduce sum thread %a, %b : memref<32xcomplex<f32>, #bulkred.scope<local>>, memref<1xcomplex<f32>, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_dynamic_shape(%a: memref<?xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' must have a static shape, got [?]
  bulkred.reduce sum thread %a, %b : memref<?xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_dynamic_dst(%a: memref<4x8xf32, #bulkred.scope<local>>, %b: memref<?xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' must have a static shape, got [?]
  bulkred.reduce sum thread %a, %b : memref<4x8xf32, #bulkred.scope<local>>, memref<?xf32, #bulkred.scope<local>>
  func.return
}

// -----

// A zero-length reduction (audit item 2): rejected before any lowering reads out of bounds.
// STDERR: tile_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'src' dimensions must be >= 1, got [0]
func.func @reduce_zero_length(%a: memref<0xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' dimensions must be >= 1, got [0]
  bulkred.reduce sum thread %a, %b : memref<0xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_zero_rows(%a: memref<0x8xi32, #bulkred.scope<local>>, %b: memref<0xi32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' dimensions must be >= 1, got [0, 8]
  bulkred.reduce max thread %a, %b : memref<0x8xi32, #bulkred.scope<local>>, memref<0xi32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_zero_inner(%a: memref<4x2x0xf64, #bulkred.scope<local>>, %b: memref<4x2xf64, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' dimensions must be >= 1, got [4, 2, 0]
  bulkred.reduce min thread %a, %b : memref<4x2x0xf64, #bulkred.scope<local>>, memref<4x2xf64, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_zero_dst(%a: memref<8xf32, #bulkred.scope<local>>, %b: memref<0xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'dst' dimensions must be >= 1, got [0]
  bulkred.reduce sum thread %a, %b : memref<8xf32, #bulkred.scope<local>>, memref<0xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_0d_src(%a: memref<f32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'src' must have at least one dimension
  bulkred.reduce sum thread %a, %b : memref<f32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_src_without_scope(%a: memref<32xf32>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' operand 'src' must be a memref with a #bulkred.scope memory space, got memref<32xf32>
  bulkred.reduce sum thread %a, %b : memref<32xf32>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_dst_other_space(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, 3 : i32>) {
  // CHECK: error: 'bulkred.reduce' operand 'dst' must be a memref with a #bulkred.scope memory space, got memref<1xf32, 3 : i32>
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, 3 : i32>
  func.return
}

// -----

func.func @reduce_unknown_kind(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: Expected `sum`, `max`, `min`, `and`, `or`, `xor`, `prod`, `any`, `all`, `argmax`, `argmin`, `var`, `logsumexp`, `nanmean`, or `minmax`
  bulkred.reduce mean thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @reduce_unknown_exec_scope(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: Expected `thread`, `warp`, `cta`, `cluster`, or `grid`
  bulkred.reduce sum block %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @unknown_memory_scope(%a: memref<32xf32, #bulkred.scope<register>>) {
  // CHECK: Expected `local`, `shared`, `global`, or `cluster_shared`
  func.return
}

// -----

func.func @copy_shape(%a: memref<32xf32, #bulkred.scope<global>>, %b: memref<16xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'dst' must have the shape and element type of 'src' memref<32xf32, #bulkred.scope<global>>, got memref<16xf32, #bulkred.scope<local>>
  bulkred.copy %a, %b : memref<32xf32, #bulkred.scope<global>>, memref<16xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_element_type(%a: memref<32xf32, #bulkred.scope<global>>, %b: memref<32xi32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'dst' must have the shape and element type of 'src' memref<32xf32, #bulkred.scope<global>>, got memref<32xi32, #bulkred.scope<local>>
  bulkred.copy %a, %b : memref<32xf32, #bulkred.scope<global>>, memref<32xi32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_without_scope(%a: memref<32xf32>, %b: memref<32xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' operand 'src' must be a memref with a #bulkred.scope memory space, got memref<32xf32>
  bulkred.copy %a, %b : memref<32xf32>, memref<32xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_zero_length(%a: memref<0xf32, #bulkred.scope<global>>, %b: memref<0xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' dimensions must be >= 1, got [0]
  bulkred.copy %a, %b : memref<0xf32, #bulkred.scope<global>>, memref<0xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_zero_inner(%a: memref<4x0xi64, #bulkred.scope<global>>, %b: memref<4x0xi64, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' dimensions must be >= 1, got [4, 0]
  bulkred.copy %a, %b : memref<4x0xi64, #bulkred.scope<global>>, memref<4x0xi64, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_dynamic(%a: memref<?xf32, #bulkred.scope<global>>, %b: memref<?xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' must have a static shape, got [?]
  bulkred.copy %a, %b : memref<?xf32, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_ui32(%a: memref<8xui32, #bulkred.scope<global>>, %b: memref<8xui32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got ui32 (integers must be signless)
  bulkred.copy %a, %b : memref<8xui32, #bulkred.scope<global>>, memref<8xui32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_i8(%a: memref<8xi8, #bulkred.scope<global>>, %b: memref<8xi8, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got i8
  bulkred.copy %a, %b : memref<8xi8, #bulkred.scope<global>>, memref<8xi8, #bulkred.scope<local>>
  func.return
}

// -----

func.func @copy_f128(%a: memref<8xf128, #bulkred.scope<global>>, %b: memref<8xf128, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.copy' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got f128
  bulkred.copy %a, %b : memref<8xf128, #bulkred.scope<global>>, memref<8xf128, #bulkred.scope<local>>
  func.return
}

// -----

func.func @bulk_copy_local_to_shared(%a: memref<64xf32, #bulkred.scope<local>>, %b: memref<64xf32, #bulkred.scope<shared>>,
                                     %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk copy from local to shared is not supported (valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<local>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_global_to_global(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk copy from global to global is not supported (valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)
  bulkred.bulk_copy %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_cluster_to_shared(%a: memref<64xf32, #bulkred.scope<cluster_shared>>, %b: memref<64xf32, #bulkred.scope<shared>>,
                                       %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk copy from cluster_shared to shared is not supported (valid: global->shared, global->cluster_shared, shared->cluster_shared, shared->global)
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<cluster_shared>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_shape(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<32xf32, #bulkred.scope<shared>>,
                           %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' 'dst' must have the shape and element type of 'src' memref<64xf32, #bulkred.scope<global>>, got memref<32xf32, #bulkred.scope<shared>>
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_12_bytes(%a: memref<3xf32, #bulkred.scope<global>>, %b: memref<3xf32, #bulkred.scope<shared>>,
                              %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk size must be a multiple of 16 bytes, got 12
  bulkred.bulk_copy %a, %b, %m : memref<3xf32, #bulkred.scope<global>>, memref<3xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// The largest bulk size is the shared memory of one CTA (227 KiB = 232448 bytes): 232464 here.
func.func @bulk_copy_into_shared_too_big(%a: memref<58116xf32, #bulkred.scope<global>>, %b: memref<58116xf32, #bulkred.scope<shared>>,
                                         %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'dst'; the mbarrier tx-count allows 1048575), got 232464
  bulkred.bulk_copy %a, %b, %m : memref<58116xf32, #bulkred.scope<global>>, memref<58116xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// 2^20 bytes of multicast: past the mbarrier tx-count too, but shared memory is the smaller limit.
func.func @bulk_copy_multicast_too_big(%a: memref<1024x256xf32, #bulkred.scope<global>>, %b: memref<1024x256xf32, #bulkred.scope<cluster_shared>>,
                                       %m: memref<1xi64, #bulkred.scope<shared>>, %mask: i16) {
  // CHECK: error: 'bulkred.bulk_copy' bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'dst'; the mbarrier tx-count allows 1048575), got 1048576
  bulkred.bulk_copy %a, %b, %m multicast %mask : memref<1024x256xf32, #bulkred.scope<global>>, memref<1024x256xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// 2^32 bytes: past the i32 size operand as well.
func.func @bulk_copy_to_global_too_big(%a: memref<1073741824xf32, #bulkred.scope<shared>>, %b: memref<1073741824xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_copy' bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'src'), got 4294967296
  bulkred.bulk_copy %a, %b : memref<1073741824xf32, #bulkred.scope<shared>>, memref<1073741824xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_too_big(%a: memref<29058xf64, #bulkred.scope<shared>>, %b: memref<29058xf64, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' bulk size must be <= 232448 bytes (the largest shared memory of a CTA, which holds 'src'), got 232464
  bulkred.bulk_reduce sum %a, %b : memref<29058xf64, #bulkred.scope<shared>>, memref<29058xf64, #bulkred.scope<global>>
  func.return
}

// -----

// Tile ops are kernel code: each one must be inside a func.func.
%a = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
%b = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
// CHECK: error: 'bulkred.reduce' must be inside a func.func kernel
bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>

// -----

%a = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
%b = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
// CHECK: error: 'bulkred.copy' must be inside a func.func kernel
bulkred.copy %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<32xf32, #bulkred.scope<local>>

// -----

%s = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
%g = "test.op"() : () -> memref<64xf32, #bulkred.scope<global>>
// CHECK: error: 'bulkred.bulk_copy' must be inside a func.func kernel
bulkred.bulk_copy %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>

// -----

builtin.module {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %g = "test.op"() : () -> memref<64xf32, #bulkred.scope<global>>
  // CHECK: error: 'bulkred.bulk_reduce' must be inside a func.func kernel
  bulkred.bulk_reduce sum %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
}

// -----

func.func @bulk_copy_dynamic(%a: memref<?xf32, #bulkred.scope<shared>>, %b: memref<?xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_copy' 'src' must have a static shape, got [?]
  bulkred.bulk_copy %a, %b : memref<?xf32, #bulkred.scope<shared>>, memref<?xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_zero_length(%a: memref<0xf32, #bulkred.scope<shared>>, %b: memref<0xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_copy' 'src' dimensions must be >= 1, got [0]
  bulkred.bulk_copy %a, %b : memref<0xf32, #bulkred.scope<shared>>, memref<0xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_si32(%a: memref<4xsi32, #bulkred.scope<shared>>, %b: memref<4xsi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_copy' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got si32 (integers must be signless)
  bulkred.bulk_copy %a, %b : memref<4xsi32, #bulkred.scope<shared>>, memref<4xsi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_zero_length(%a: memref<8x0xi32, #bulkred.scope<shared>>, %b: memref<8x0xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'src' dimensions must be >= 1, got [8, 0]
  bulkred.bulk_reduce sum %a, %b : memref<8x0xi32, #bulkred.scope<shared>>, memref<8x0xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_i8(%a: memref<16xi8, #bulkred.scope<shared>>, %b: memref<16xi8, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'src' element type must be one of i16, i32, i64, f16, bf16, f32, f64, got i8
  bulkred.bulk_reduce sum %a, %b : memref<16xi8, #bulkred.scope<shared>>, memref<16xi8, #bulkred.scope<global>>
  func.return
}

// -----

// i16 is a tile element type, but cp.reduce.async.bulk has no 16-bit integer form.
func.func @bulk_reduce_i16(%a: memref<8xi16, #bulkred.scope<shared>>, %b: memref<8xi16, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'kind' sum on element type i16 has no cp.reduce.async.bulk form into global (valid .type for .add: u32, s32, u64, f32, f64, f16, bf16)
  bulkred.bulk_reduce sum %a, %b : memref<8xi16, #bulkred.scope<shared>>, memref<8xi16, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_missing_mbar_shared(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' a bulk copy into shared needs an 'mbar' operand
  bulkred.bulk_copy %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_missing_mbar_cluster(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<cluster_shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' a bulk copy into cluster_shared needs an 'mbar' operand
  bulkred.bulk_copy %a, %b : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>
  func.return
}

// -----

func.func @bulk_copy_mbar_into_global(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<global>>,
                                      %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' a bulk copy into global completes by bulk group and takes no 'mbar'
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_multicast_to_shared(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<shared>>,
                                         %m: memref<1xi64, #bulkred.scope<shared>>, %mask: i16) {
  // CHECK: error: 'bulkred.bulk_copy' 'cta_mask' (multicast) is only valid for a global -> cluster_shared copy
  bulkred.bulk_copy %a, %b, %m multicast %mask : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_multicast_from_shared(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<cluster_shared>>,
                                           %m: memref<1xi64, #bulkred.scope<shared>>, %mask: i16) {
  // CHECK: error: 'bulkred.bulk_copy' 'cta_mask' (multicast) is only valid for a global -> cluster_shared copy
  bulkred.bulk_copy %a, %b, %m multicast %mask : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_reduce_src_global(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' operand 'src' must be in scope shared, got global
  bulkred.bulk_reduce sum %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_dst_shared(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_reduce' operand 'dst' must be in scope global or cluster_shared, got shared
  bulkred.bulk_reduce sum %a, %b : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_reduce_shape(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<4x16xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'dst' must have the shape and element type of 'src' memref<64xf32, #bulkred.scope<shared>>, got memref<4x16xf32, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %a, %b : memref<64xf32, #bulkred.scope<shared>>, memref<4x16xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_xor_on_float(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'kind' xor needs an integer element type, got f32
  bulkred.bulk_reduce xor %a, %b : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_8_bytes(%a: memref<2xi32, #bulkred.scope<shared>>, %b: memref<2xi32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' bulk size must be a multiple of 16 bytes, got 8
  bulkred.bulk_reduce sum %a, %b : memref<2xi32, #bulkred.scope<shared>>, memref<2xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_missing_mbar(%a: memref<4xi32, #bulkred.scope<shared>>, %b: memref<4xi32, #bulkred.scope<cluster_shared>>) {
  // CHECK: error: 'bulkred.bulk_reduce' a bulk reduce into cluster_shared needs an 'mbar' operand
  bulkred.bulk_reduce sum %a, %b : memref<4xi32, #bulkred.scope<shared>>, memref<4xi32, #bulkred.scope<cluster_shared>>
  func.return
}

// -----

func.func @bulk_reduce_mbar_into_global(%a: memref<4xi32, #bulkred.scope<shared>>, %b: memref<4xi32, #bulkred.scope<global>>,
                                        %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_reduce' a bulk reduce into global completes by bulk group and takes no 'mbar'
  bulkred.bulk_reduce sum %a, %b, %m : memref<4xi32, #bulkred.scope<shared>>, memref<4xi32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// CHECK: 'grid' [3, 1, 1] must be a multiple of 'cluster' [2, 1, 1] in every dimension
func.func @launch_grid_not_multiple() attributes {bulkred.launch = #bulkred.launch<grid = [3], block = [32], cluster = [2]>} {
  func.return
}

// -----

// CHECK: 'grid' [4, 3, 1] must be a multiple of 'cluster' [2, 2, 1] in every dimension
func.func @launch_grid_not_multiple_y() attributes {bulkred.launch = #bulkred.launch<grid = [4, 3], cluster = [2, 2]>} {
  func.return
}

// -----

// CHECK: 'block' entries must be >= 1, got 0
func.func @launch_zero_block() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [0]>} {
  func.return
}

// -----

// CHECK: 'cluster' must have 1 to 3 entries, got 4
func.func @launch_four_dims() attributes {bulkred.launch = #bulkred.launch<grid = [1], cluster = [1, 1, 1, 1]>} {
  func.return
}

// -----

// CHECK: 'grid' must have 1 to 3 entries, got 0
func.func @launch_empty_grid() attributes {bulkred.launch = #bulkred.launch<grid = []>} {
  func.return
}

// -----

// CHECK: unknown launch field 'threads' (expected grid, block or cluster)
func.func @launch_unknown_field() attributes {bulkred.launch = #bulkred.launch<grid = [1], threads = [32]>} {
  func.return
}

// -----

func.func @bulk_reduce_not_in_table(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'kind' min on element type f32 has no cp.reduce.async.bulk form into global (valid .type for .min: u32, s32, u64, s64, f16, bf16)
  bulkred.bulk_reduce min %a, %b : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_bad_mbar(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<shared>>, %m: memref<2xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' operand 'mbar' must be memref<1xi64, #bulkred.scope<shared>>, got memref<2xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<2xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// The CUDA launch limits: at most 1024 threads per block (x, y <= 1024, z <= 64), grid
// y and z <= 65535, at most 16 CTAs per cluster (the accepted shapes are in tile.mlir).
// CHECK: error: 'block' x dimension must be <= 1024, got 2048
func.func @launch_block_2048() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [2048]>} {
  func.return
}

// -----

// CHECK: error: 'block' y dimension must be <= 1024, got 1025
func.func @launch_block_y() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1, 1025]>} {
  func.return
}

// -----

// CHECK: error: 'block' z dimension must be <= 64, got 65
func.func @launch_block_z() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1, 1, 65]>} {
  func.return
}

// -----

// CHECK: error: 'block' [32, 32, 2] has 2048 threads, more than 1024 per block
func.func @launch_block_threads() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32, 32, 2]>} {
  func.return
}

// -----

// CHECK: error: 'block' x dimension must be <= 1024, got 1025
func.func @launch_block_threads_1025() attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1025, 1, 1]>} {
  func.return
}

// -----

// CHECK: error: 'grid' x dimension must be <= 2147483647, got 2147483648
func.func @launch_grid_x() attributes {bulkred.launch = #bulkred.launch<grid = [2147483648], block = [32]>} {
  func.return
}

// -----

// CHECK: error: 'grid' y dimension must be <= 65535, got 65536
func.func @launch_grid_y() attributes {bulkred.launch = #bulkred.launch<grid = [1, 65536], block = [32]>} {
  func.return
}

// -----

// CHECK: error: 'grid' z dimension must be <= 65535, got 65536
func.func @launch_grid_z() attributes {bulkred.launch = #bulkred.launch<grid = [1, 1, 65536], block = [32]>} {
  func.return
}

// -----

// CHECK: error: 'cluster' [32, 1, 1] has 32 CTAs, more than 16 (8 portable, up to 16 non-portable)
func.func @launch_cluster_32() attributes {bulkred.launch = #bulkred.launch<grid = [32], block = [32], cluster = [32]>} {
  func.return
}

// -----

// CHECK: error: 'cluster' [4, 2, 3] has 24 CTAs, more than 16 (8 portable, up to 16 non-portable)
func.func @launch_cluster_product() attributes {bulkred.launch = #bulkred.launch<grid = [8, 4], block = [32], cluster = [4, 2, 3]>} {
  func.return
}

// -----

func.func @bulk_copy_cluster_without_rank(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<cluster_shared>>,
                                          %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a 'rank' operand (the CTA whose buffer it writes)
  bulkred.bulk_copy %a, %b, %m : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_reduce_cluster_without_rank(%a: memref<4xi32, #bulkred.scope<shared>>, %b: memref<4xi32, #bulkred.scope<cluster_shared>>,
                                            %m: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: error: 'bulkred.bulk_reduce' a bulk operation into cluster_shared needs a 'rank' operand (the CTA whose buffer it writes)
  bulkred.bulk_reduce sum %a, %b, %m : memref<4xi32, #bulkred.scope<shared>>, memref<4xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_rank_into_global(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<global>>, %r: index) {
  // CHECK: error: 'bulkred.bulk_copy' 'rank' is only valid for a bulk operation into cluster_shared, not into global
  bulkred.bulk_copy %a, %b rank %r : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_rank_into_global(%a: memref<4xi32, #bulkred.scope<shared>>, %b: memref<4xi32, #bulkred.scope<global>>, %r: index) {
  // CHECK: error: 'bulkred.bulk_reduce' 'rank' is only valid for a bulk operation into cluster_shared, not into global
  bulkred.bulk_reduce sum %a, %b rank %r : memref<4xi32, #bulkred.scope<shared>>, memref<4xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_copy_rank_with_multicast(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<cluster_shared>>,
                                         %m: memref<1xi64, #bulkred.scope<shared>>, %r: index, %mask: i16) {
  // CHECK: error: 'bulkred.bulk_copy' 'rank' is not valid with 'cta_mask': a multicast copy writes every CTA of the mask
  bulkred.bulk_copy %a, %b, %m multicast %mask rank %r : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_copy_cluster_of_one(%a: memref<64xf32, #bulkred.scope<shared>>, %b: memref<64xf32, #bulkred.scope<cluster_shared>>,
                                    %m: memref<1xi64, #bulkred.scope<shared>>, %r: index) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [32], cluster = [1]>} {
  // CHECK: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a kernel launched with a cluster of 2 or more CTAs, got 'cluster' [1, 1, 1]
  bulkred.bulk_copy %a, %b, %m rank %r : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @bulk_reduce_cluster_tx_count(%a: memref<32768xi32, #bulkred.scope<shared>>, %b: memref<32768xi32, #bulkred.scope<cluster_shared>>,
                                        %m: memref<1xi64, #bulkred.scope<shared>>, %r: index) attributes {bulkred.launch = #bulkred.launch<grid = [16], block = [32], cluster = [16]>} {
  // CHECK: error: 'bulkred.bulk_reduce' the receiving CTA expects 15 x 131072 bytes from the other CTAs of its cluster of 16, more than the mbarrier tx-count allows (1048575)
  bulkred.bulk_reduce sum %a, %b, %m rank %r : memref<32768xi32, #bulkred.scope<shared>>, memref<32768xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// A slice of rows is contiguous; a slice of columns is not.
func.func @bulk_copy_column_view(%g: memref<8x64xf32, #bulkred.scope<global>>, %s: memref<8x32xf32, #bulkred.scope<shared>>, %i: index) {
  %v = memref.subview %g[0, %i] [8, 32] [1, 1] : memref<8x64xf32, #bulkred.scope<global>> to memref<8x32xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  // CHECK: error: 'bulkred.bulk_copy' 'dst' must be one contiguous range of memory for a bulk operation, got strides [64, 1] for shape [8, 32] (a slice of a matrix is contiguous only when it spans full rows)
  bulkred.bulk_copy %s, %v : memref<8x32xf32, #bulkred.scope<shared>>, memref<8x32xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  func.return
}

// -----

func.func @bulk_reduce_unaligned_view(%g: memref<64xf32, #bulkred.scope<global>>, %s: memref<16xf32, #bulkred.scope<shared>>) {
  %v = memref.subview %g[2] [16] [1] : memref<64xf32, #bulkred.scope<global>> to memref<16xf32, strided<[1], offset: 2>, #bulkred.scope<global>>
  // CHECK: error: 'bulkred.bulk_reduce' 'dst' must start at a multiple of 16 bytes for a bulk operation, got offset 2 elements (8 bytes)
  bulkred.bulk_reduce sum %s, %v : memref<16xf32, #bulkred.scope<shared>>, memref<16xf32, strided<[1], offset: 2>, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.cluster_rank' must be inside a func.func kernel
%rank = bulkred.cluster_rank

// -----

// CHECK: error: 'bulkred.cluster_size' must be inside a func.func kernel
%size = bulkred.cluster_size

// -----

func.func @cluster_rank_operand(%a: index) {
  // CHECK: error: 'bulkred.cluster_rank' Expected 0 operands, but got 1
  %r = "bulkred.cluster_rank"(%a) : (index) -> index
  func.return
}
