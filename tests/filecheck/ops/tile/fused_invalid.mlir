// Every verifier rule of the fused reductions of bulkred.reduce (ops/tile/reduce.py: ReduceOp's
// _verify_fused, check_maps, MapAttr's parser and verifier; docs/fused.md), each with its
// exact message and its file:line:col.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// A map name that MapFn does not have.
// STDERR: fused_invalid.mlir:[[# @LINE + 3]]:65: error: unknown map 'cube', expected one of cast, abs, square, pow, scale, exp_sub, nonzero, nan_zero, div_count, sqrt, log
func.func @unknown_map(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:65: error: unknown map 'cube', expected one of cast, abs, square, pow, scale, exp_sub, nonzero, nan_zero, div_count, sqrt, log
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cube>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// pow and scale take a float argument.
func.func @map_missing_argument(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:68: error: map 'pow' needs a float argument, e.g. #bulkred.map<pow 2.0>
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<pow>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The other maps take none.
func.func @map_extra_argument(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:69: error: map 'abs' takes no argument, got 2.0
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<abs 2.0>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// An argument too large for f64 is inf, which no map takes.
func.func @map_infinite_argument(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:71: error: map 'scale' needs a finite argument, got inf
  bulkred.reduce sum grid axes [1 : i64] epilogue [#bulkred.map<scale 1.0e400>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// div_count is an epilogue map.
func.func @prologue_map_not_allowed(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 0 must be one of cast, abs, square, pow, scale, exp_sub, nonzero, nan_zero, got div_count
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<div_count>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// abs is a prologue map.
func.func @epilogue_map_not_allowed(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' map 1 must be one of div_count, sqrt, log, pow, scale, got abs
  bulkred.reduce sum grid axes [1 : i64] epilogue [#bulkred.map<sqrt>, #bulkred.map<abs>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// cast (the conversion to the accumulator type) comes first.
func.func @cast_not_first(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'cast' must come first, got it at position 1
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<abs>, #bulkred.map<cast>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// pow needs a float accumulator; int32's is int32.
func.func @float_map_on_integer_prologue(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'prologue' map 'pow' needs a floating-point accumulator, got i32 (kind sum)
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<pow 2.0>] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// So does sqrt.
func.func @float_map_on_integer_epilogue(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' map 'sqrt' needs a floating-point accumulator, got i32 (kind sum)
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// argmax's result is an index: no epilogue.
func.func @epilogue_on_argmax(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' is not valid with kind argmax (its result is an index)
  bulkred.reduce argmax grid axes [1 : i64] epilogue [#bulkred.map<scale 2.0>] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// Nor argmin's.
func.func @epilogue_on_argmin(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' is not valid with kind argmin (its result is an index)
  bulkred.reduce argmin grid axes [1 : i64] prologue [#bulkred.map<abs>] epilogue [#bulkred.map<sqrt>] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// The epilogue applies to the final result, which accum would combine again.
func.func @epilogue_with_accum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'epilogue' is not valid with 'accum' (the epilogue applies to the final result)
  bulkred.reduce sum grid accum axes [1 : i64] epilogue [#bulkred.map<sqrt>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// correction is var's.
func.func @correction_on_sum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'correction' is only valid with kind var, got kind sum
  bulkred.reduce sum grid axes [1 : i64] correction 1 : i64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @correction_on_logsumexp(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'correction' is only valid with kind var, got kind logsumexp
  bulkred.reduce logsumexp grid axes [1 : i64] correction 0 : i64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aux is argmax/argmin's value, var's mean or minmax's maximum.
func.func @aux_on_sum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' is only valid with kind argmax, argmin, var or minmax, or with the prologue map exp_sub, got kind sum
  bulkred.reduce sum grid axes [1 : i64] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @aux_on_logsumexp(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' is only valid with kind argmax, argmin, var or minmax, or with the prologue map exp_sub, got kind logsumexp
  bulkred.reduce logsumexp grid axes [1 : i64] %x, %v aux %a : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// argmax's aux holds the values: src's element type.
func.func @aux_type_argmax(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>, %a: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' element type must be f32, the values (src's element type), got i64
  bulkred.reduce argmax grid axes [1 : i64] %x, %i aux %a : memref<64xi64, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// var's aux holds the mean: dst's element type (here the wider f32 of a bf16 src).
func.func @aux_type_var(%x: memref<64x128xbf16, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<64xbf16, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' element type must be f32, the mean (dst's element type), got bf16
  bulkred.reduce var grid axes [1 : i64] %x, %v aux %a : memref<64xbf16, #bulkred.scope<global>> : memref<64x128xbf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aux has dst's shape.
func.func @aux_shape(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %a: memref<128xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' shape must be dst's [64], got [128]
  bulkred.reduce var grid axes [1 : i64] %x, %v aux %a : memref<128xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aux is a global buffer.
func.func @aux_scope(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>, %a: memref<64xf32, #bulkred.scope<shared>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' operand 'aux' must be in scope global at grid scope, got shared
  bulkred.reduce argmax grid axes [1 : i64] %x, %i aux %a : memref<64xf32, #bulkred.scope<shared>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// aux is contiguous (no layout).
func.func @aux_layout(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>, %a: memref<64xf32, strided<[2]>, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' must be contiguous (no layout), got strided<[2]>
  bulkred.reduce argmax grid axes [1 : i64] %x, %i aux %a : memref<64xf32, strided<[2]>, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// argmax's dst is the i64 index.
func.func @argmax_dst_i32(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type of kind argmax must be i64 (the index), got i32
  bulkred.reduce argmax grid axes [1 : i64] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @argmin_dst_f32(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type of kind argmin must be i64 (the index), got f32
  bulkred.reduce argmin grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// var and logsumexp need a floating-point element type.
func.func @var_on_integers(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' var needs a floating-point element type, got i32
  bulkred.reduce var grid axes [1 : i64] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @logsumexp_on_integers(%x: memref<64x128xi32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' logsumexp needs a floating-point element type, got i32
  bulkred.reduce logsumexp grid axes [1 : i64] %x, %v : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// accum and ignore_nan are not valid with a fused kind.
func.func @argmax_accum(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'accum' is not valid with kind argmax
  bulkred.reduce argmax grid accum axes [1 : i64] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @var_accum(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'accum' is not valid with kind var
  bulkred.reduce var grid accum axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @argmax_ignore_nan(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'ignore_nan' is not valid with kind argmax
  bulkred.reduce argmax grid ignore_nan axes [1 : i64] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @logsumexp_ignore_nan(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'ignore_nan' is not valid with kind logsumexp
  bulkred.reduce logsumexp grid ignore_nan axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The fused kinds are grid-scope only.
func.func @argmax_at_warp_scope(%a: memref<1xf32, #bulkred.scope<local>>, %b: memref<1xi64, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' argmax is only valid at grid scope, got scope warp
  bulkred.reduce argmax warp %a, %b : memref<1xf32, #bulkred.scope<local>>, memref<1xi64, #bulkred.scope<local>>
  func.return
}

// -----

func.func @var_at_thread_scope(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'kind' var is only valid at grid scope, got scope thread
  bulkred.reduce var thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// So are the maps.
func.func @prologue_at_cta_scope(%a: memref<1xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' a prologue or epilogue is only valid at grid scope, got scope cta
  bulkred.reduce max cta prologue [#bulkred.map<abs>] %a, %b : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @epilogue_at_thread_scope(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' a prologue or epilogue is only valid at grid scope, got scope thread
  bulkred.reduce sum thread epilogue [#bulkred.map<sqrt>] %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// A correction must be finite (torch's correction=1.3 is an f64 attribute).
func.func @infinite_correction(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'correction' must be finite, got inf
  bulkred.reduce var grid axes [1 : i64] correction 0x7FF0000000000000 : f64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The prologue cast reaches a float from an integer, bool or wider float, or a narrower integer.
func.func @cast_float_to_int(%x: memref<64x128xf64, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type of a reduction with the prologue 'cast' must be a float from an integer, bool or wider float 'src', or an integer narrower than an integer 'src', got i32 from f64
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>] %x, %v : memref<64x128xf64, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// float16 into bfloat16 is no narrower: not a cast it takes.
func.func @cast_f16_into_bf16(%x: memref<64x128xf16, #bulkred.scope<global>>, %v: memref<64xbf16, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type of a reduction with the prologue 'cast' must be a float from an integer, bool or wider float 'src', or an integer narrower than an integer 'src', got bf16 from f16
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>] %x, %v : memref<64x128xf16, #bulkred.scope<global>>, memref<64xbf16, #bulkred.scope<global>>
  func.return
}

// -----

// any/all with the prologue nonzero write i1 or ui8 (torch's uint8 any), nothing else.
func.func @any_into_i32(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xi32, #bulkred.scope<global>>) {
  // CHECK: fused_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'dst' element type of any with the prologue [nonzero] must be i1 (bool) or ui8, got i32
  bulkred.reduce any grid axes [1 : i64] prologue [#bulkred.map<nonzero>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}
