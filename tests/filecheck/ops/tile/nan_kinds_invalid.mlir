// The verifier rules of the NaN-aware reductions of bulkred.reduce (ops/tile/reduce.py:
// ReduceOp._verify_fused, check_maps; docs/fused.md): the prologue map nan_zero
// (nansum), the kind nanmean (a sum and a count of the non-NaN elements) and the kind
// minmax (dst the minimum, aux the maximum), each message with its file:line:col.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// nan_zero is a nansum's map: kind sum only.
// STDERR: nan_kinds_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'prologue' map 'nan_zero' is only valid with kind sum (a nansum), got kind max
func.func @nan_zero_on_max(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'nan_zero' is only valid with kind sum (a nansum), got kind max
  bulkred.reduce max grid axes [1 : i64] prologue [#bulkred.map<nan_zero>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @nan_zero_on_nanmean(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'nan_zero' is only valid with kind sum (a nansum), got kind nanmean
  bulkred.reduce nanmean grid axes [1 : i64] prologue [#bulkred.map<nan_zero>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// An integer has no NaN: nan_zero needs a float accumulator (bulkred.nansum of an
// integer array is a plain sum).
func.func @nan_zero_on_integers(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'nan_zero' needs a floating-point accumulator, got i32 (kind sum)
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<nan_zero>] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// nan_zero is a prologue map.
func.func @nan_zero_in_the_epilogue(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' map 0 must be one of div_count, sqrt, log, pow, scale, got nan_zero
  bulkred.reduce sum grid axes [1 : i64] epilogue [#bulkred.map<nan_zero>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A prologue map is grid-scope only.
func.func @nan_zero_at_thread_scope(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' a prologue or epilogue is only valid at grid scope, got scope thread
  bulkred.reduce sum thread prologue [#bulkred.map<nan_zero>] %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// nanmean needs a floating-point element type (an integer has no NaN, and a mean is a float).
func.func @nanmean_on_integers(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' nanmean needs a floating-point element type, got i32
  bulkred.reduce nanmean grid axes [1 : i64] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Its dst: src's type or a wider float.
func.func @nanmean_dst_narrower(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf16, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type must be src's f32 or a wider accumulator type (f64), got f16
  bulkred.reduce nanmean grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf16, #bulkred.scope<global>>
  func.return
}

// -----

// nanmean has one result: no aux.
func.func @aux_on_nanmean(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' is only valid with kind argmax, argmin, var or minmax, or with the prologue map exp_sub, got kind nanmean
  bulkred.reduce nanmean grid axes [1 : i64] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// exp_sub (a softmax denominator's map, reading c from aux) goes with a plain kind.
func.func @exp_sub_on_nanmean(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'exp_sub' is not valid with kind nanmean (a plain kind's map)
  bulkred.reduce nanmean grid axes [1 : i64] prologue [#bulkred.map<exp_sub>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @nanmean_accum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'accum' is not valid with kind nanmean
  bulkred.reduce nanmean grid accum axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @nanmean_ignore_nan(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'ignore_nan' is not valid with kind nanmean
  bulkred.reduce nanmean grid ignore_nan axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @nanmean_at_cta_scope(%a: memref<1xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' nanmean is only valid at grid scope, got scope cta
  bulkred.reduce nanmean cta %a, %b : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// minmax writes the maximum into aux: it needs one.
func.func @minmax_without_aux(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' minmax needs 'aux', the buffer of the maximum ('dst' receives the minimum), got none
  bulkred.reduce minmax grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aux holds the maximum: dst's element type (here the wider f32 of an f16 src).
func.func @minmax_aux_type(%x: memref<64x128xf16, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf16, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' element type must be f32, the maximum (dst's element type), got f16
  bulkred.reduce minmax grid axes [1 : i64] %x, %v aux %a : memref<64xf16, #bulkred.scope<global>> : memref<64x128xf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @minmax_aux_shape(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<128xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' shape must be dst's [64], got [128]
  bulkred.reduce minmax grid axes [1 : i64] %x, %v aux %a : memref<128xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// An integer minmax has no wider dst (as max and min).
func.func @minmax_dst_wider_integer(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi64, #bulkred.scope<global>>, %a: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type must be src's i32 (kind minmax of i32 has no wider accumulator type), got i64
  bulkred.reduce minmax grid axes [1 : i64] %x, %v aux %a : memref<64xi64, #bulkred.scope<global>> : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// Its two results are elements: no epilogue (a prologue is taken).
func.func @epilogue_on_minmax(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' is not valid with kind minmax (its two results are elements of 'src')
  bulkred.reduce minmax grid axes [1 : i64] prologue [#bulkred.map<abs>] epilogue [#bulkred.map<sqrt>] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// minmax propagates NaN (as torch.aminmax): no ignore_nan, no accum.
func.func @minmax_ignore_nan(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'ignore_nan' is not valid with kind minmax
  bulkred.reduce minmax grid ignore_nan axes [1 : i64] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @minmax_accum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'accum' is not valid with kind minmax
  bulkred.reduce minmax grid accum axes [1 : i64] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @minmax_at_warp_scope(%a: memref<1xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' minmax is only valid at grid scope, got scope warp
  bulkred.reduce minmax warp %a, %b : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// cp.reduce.async.bulk has no form of the fused kinds.
func.func @bulk_reduce_minmax(%s: memref<64xf32, #bulkred.scope<shared>>, %g: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: nan_kinds_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.bulk_reduce' 'kind' minmax has no cp.reduce.async.bulk form (valid: sum, max, min, and, or, xor)
  bulkred.bulk_reduce minmax %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}
