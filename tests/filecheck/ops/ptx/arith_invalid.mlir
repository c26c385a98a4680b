// Every verifier and parse rule of the ops in arith.py, rejected with its message: '.type' per
// op, '.rnd' (only add/sub/mul, only floating-point types, only rn for f16/bf16), '.ftz' (only
// f16/f32), '.NaN' (only min/max of f16/bf16/f32), operand types by '.type', the shift amount, repeated or unknown qualifiers, and the
// fixed operand types of max3/min3, add.f32x2 and mov.pack/unpack.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// '.NaN' exists for max/min of f16, bf16 and f32 only (max.f64 and the integer forms have none).
// STDERR: arith_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.max' '.NaN' is only valid with '.type' f16, bf16, f32 for 'max', got '.type' f64
func.func @max_nan_f64(%a: f64) {
  // CHECK: error: 'ptx.max' '.NaN' is only valid with '.type' f16, bf16, f32 for 'max', got '.type' f64
  %0 = ptx.max NaN f64 %a, %a : f64
  func.return
}

// -----

func.func @min_nan_s32(%a: i32) {
  // CHECK: error: 'ptx.min' '.NaN' is only valid with '.type' f16, bf16, f32 for 'min', got '.type' s32
  %0 = ptx.min NaN s32 %a, %a : i32
  func.return
}

// -----

// add has no '.NaN' qualifier.
func.func @add_nan(%a: f32) {
  // CHECK: error: unexpected qualifier 'NaN' (expected rn, rz, rm, rp, ftz, or a type
  %0 = ptx.add NaN f32 %a, %a : f32
  func.return
}

// -----

func.func @max_nan_twice(%a: f32) {
  // CHECK: error: '.NaN' given twice (NaN, then NaN)
  %0 = ptx.max NaN NaN f32 %a, %a : f32
  func.return
}

// -----

// max takes no '.rnd' at all, whatever '.type' is.
// STDERR: arith_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.max' '.rnd' is not valid for 'max' (valid for: add, sub, mul)
func.func @max_rnd_f32(%a: f32) {
  // CHECK: error: 'ptx.max' '.rnd' is not valid for 'max' (valid for: add, sub, mul)
  %0 = ptx.max rn f32 %a, %a : f32
  func.return
}

// -----

func.func @max_rnd_s32(%a: i32) {
  // CHECK: error: 'ptx.max' '.rnd' is not valid for 'max' (valid for: add, sub, mul)
  %0 = ptx.max rn s32 %a, %a : i32
  func.return
}

// -----

func.func @min_rnd_f64(%a: f64) {
  // CHECK: error: 'ptx.min' '.rnd' is not valid for 'min' (valid for: add, sub, mul)
  %0 = ptx.min rz f64 %a, %a : f64
  func.return
}

// -----

func.func @mul_lo_rnd(%a: i32) {
  // CHECK: error: 'ptx.mul.lo' '.rnd' is not valid for 'mul.lo' (valid for: add, sub, mul)
  %0 = ptx.mul.lo rn s32 %a, %a : i32
  func.return
}

// -----

// add and sub take '.rnd' with a floating-point '.type' only.
func.func @add_rnd_int(%a: i32) {
  // CHECK: error: 'ptx.add' '.rnd' is only valid with a floating-point '.type' for 'add' (f16, bf16, f32, f64), got '.type' s32
  %0 = ptx.add rn s32 %a, %a : i32
  func.return
}

// -----

func.func @sub_rnd_int(%a: i64) {
  // CHECK: error: 'ptx.sub' '.rnd' is only valid with a floating-point '.type' for 'sub' (f16, bf16, f32, f64), got '.type' u64
  %0 = ptx.sub rm u64 %a, %a : i64
  func.return
}

// -----

// The half-precision forms round to nearest only.
func.func @add_rz_f16(%a: f16) {
  // CHECK: error: 'ptx.add' '.rnd' rz is not valid with '.type' f16 for 'add' (valid: rn)
  %0 = ptx.add rz f16 %a, %a : f16
  func.return
}

// -----

func.func @sub_rp_f16(%a: f16) {
  // CHECK: error: 'ptx.sub' '.rnd' rp is not valid with '.type' f16 for 'sub' (valid: rn)
  %0 = ptx.sub rp f16 %a, %a : f16
  func.return
}

// -----

func.func @mul_rm_bf16(%a: bf16) {
  // CHECK: error: 'ptx.mul' '.rnd' rm is not valid with '.type' bf16 for 'mul' (valid: rn)
  %0 = ptx.mul rm bf16 %a, %a : bf16
  func.return
}

// -----

// '.ftz' exists for f32 and f16 only: f64 and bf16 have no subnormal flushing.
func.func @add_ftz_f64(%a: f64) {
  // CHECK: error: 'ptx.add' '.ftz' is only valid with '.type' f16 or f32 for 'add', got '.type' f64
  %0 = ptx.add rn ftz f64 %a, %a : f64
  func.return
}

// -----

func.func @max_ftz_bf16(%a: bf16) {
  // CHECK: error: 'ptx.max' '.ftz' is only valid with '.type' f16 or f32 for 'max', got '.type' bf16
  %0 = ptx.max ftz bf16 %a, %a : bf16
  func.return
}

// -----

func.func @sub_ftz_int(%a: i32) {
  // CHECK: error: 'ptx.sub' '.ftz' is only valid with '.type' f16 or f32 for 'sub', got '.type' s32
  %0 = ptx.sub ftz s32 %a, %a : i32
  func.return
}

// -----

func.func @mul_lo_ftz(%a: i32) {
  // CHECK: error: 'ptx.mul.lo' '.ftz' is only valid with '.type' f16 or f32 for 'mul.lo', got '.type' u32
  %0 = ptx.mul.lo ftz u32 %a, %a : i32
  func.return
}

// -----

// '.type' per op: mul is the floating-point multiply, mul.lo the integer one; add/sub/min/max
// take no bit-size type.
func.func @mul_int(%a: i32) {
  // CHECK: error: 'ptx.mul' '.type' s32 is not valid for 'mul' (valid: f16, bf16, f32, f64)
  %0 = ptx.mul s32 %a, %a : i32
  func.return
}

// -----

func.func @mul_lo_float(%a: f32) {
  // CHECK: error: 'ptx.mul.lo' '.type' f32 is not valid for 'mul.lo' (valid: u16, s16, u32, s32, u64, s64)
  %0 = ptx.mul.lo f32 %a, %a : f32
  func.return
}

// -----

func.func @add_b32(%a: i32) {
  // CHECK: error: 'ptx.add' '.type' b32 is not valid for 'add' (valid: u16, s16, u32, s32, u64, s64, f16, bf16, f32, f64)
  %0 = ptx.add b32 %a, %a : i32
  func.return
}

// -----

func.func @min_b64(%a: i64) {
  // CHECK: error: 'ptx.min' '.type' b64 is not valid for 'min' (valid: u16, s16, u32, s32, u64, s64, f16, bf16, f32, f64)
  %0 = ptx.min b64 %a, %a : i64
  func.return
}

// -----

// Operands and result have the IR type of '.type'.
func.func @add_f32_on_i32(%a: i32) {
  // CHECK: error: 'ptx.add' operand 'a' must be f32 for '.type' f32, got i32
  %0 = ptx.add f32 %a, %a : i32
  func.return
}

// -----

func.func @add_s16_on_i32(%a: i32) {
  // CHECK: error: 'ptx.add' operand 'a' must be i16 for '.type' s16, got i32
  %0 = ptx.add s16 %a, %a : i32
  func.return
}

// -----

func.func @max_bf16_on_f16(%a: f16) {
  // CHECK: error: 'ptx.max' operand 'a' must be bf16 for '.type' bf16, got f16
  %0 = ptx.max bf16 %a, %a : f16
  func.return
}

// -----

func.func @generic_mixed_types(%a: f32, %b: f64) {
  // CHECK: error: 'ptx.sub' operand 'rhs' at position 1 does not verify: attribute f32 expected from variable 'T', but got f64
  %0 = "ptx.sub"(%a, %b) <{type = #ptx<arith_type f32>}> : (f32, f64) -> f32
  func.return
}

// -----

func.func @generic_result_type(%a: f32) {
  // CHECK: error: 'ptx.add' result 'result' at position 0 does not verify: attribute f32 expected from variable 'T', but got f64
  %0 = "ptx.add"(%a, %a) <{type = #ptx<arith_type f32>}> : (f32, f32) -> f64
  func.return
}

// -----

// Custom syntax: '.rnd', '.ftz' and '.type' are words before the operands, each at most once.
func.func @missing_type(%a: f32) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:16: error: expected a '.type' qualifier (u16, s16, u32, s32, u64, s64, b16, b32, b64, f16, bf16, f32, f64)
  %0 = ptx.add %a, %a : f32
  func.return
}

// -----

func.func @unknown_qualifier(%a: f32) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:16: error: unexpected qualifier 'sat' (expected rn, rz, rm, rp, ftz, or a type (u16, s16, u32, s32, u64, s64, b16, b32, b64, f16, bf16, f32, f64))
  %0 = ptx.add sat f32 %a, %a : f32
  func.return
}

// -----

func.func @rnd_twice(%a: f32) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:19: error: '.rnd' given twice (rn, then rz)
  %0 = ptx.add rn rz f32 %a, %a : f32
  func.return
}

// -----

func.func @ftz_twice(%a: f32) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:20: error: '.ftz' given twice (ftz, then ftz)
  %0 = ptx.min ftz ftz f32 %a, %a : f32
  func.return
}

// -----

func.func @type_twice(%a: i32) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:20: error: '.type' given twice (s32, then u32)
  %0 = ptx.sub s32 u32 %a, %a : i32
  func.return
}

// -----

// and/or/xor take a bit-size '.type'; shr also the integer types; shl only bit sizes.
func.func @and_s32(%a: i32) {
  // CHECK: error: 'ptx.and' '.type' s32 is not valid for 'and' (valid: b16, b32, b64)
  %0 = ptx.and s32 %a, %a : i32, i32
  func.return
}

// -----

func.func @xor_f32(%a: f32) {
  // CHECK: error: 'ptx.xor' '.type' f32 is not valid for 'xor' (valid: b16, b32, b64)
  %0 = ptx.xor f32 %a, %a : f32, f32
  func.return
}

// -----

func.func @shl_u32(%a: i32) {
  // CHECK: error: 'ptx.shl' '.type' u32 is not valid for 'shl' (valid: b16, b32, b64)
  %0 = ptx.shl u32 %a, %a : i32, i32
  func.return
}

// -----

func.func @shr_f64(%a: f64, %n: i32) {
  // CHECK: error: 'ptx.shr' '.type' f64 is not valid for 'shr' (valid: b16, b32, b64, u16, s16, u32, s32, u64, s64)
  %0 = ptx.shr f64 %a, %n : f64, i32
  func.return
}

// -----

func.func @or_b64_on_i32(%a: i32) {
  // CHECK: error: 'ptx.or' operand 'a' must be i64 for '.type' b64, got i32
  %0 = ptx.or b64 %a, %a : i32, i32
  func.return
}

// -----

func.func @xor_b_width(%a: i32, %b: i64) {
  // CHECK: error: 'ptx.xor' operand 'b' must be i32 for '.type' b32, got i64
  %0 = ptx.xor b32 %a, %b : i32, i64
  func.return
}

// -----

// The shift amount is a u32 register whatever '.type' is.
func.func @shl_amount_i64(%a: i64) {
  // CHECK: error: 'ptx.shl' operand 'b' must be i32 (a u32 shift amount), got i64
  %0 = ptx.shl b64 %a, %a : i64, i64
  func.return
}

// -----

func.func @shr_amount_i16(%a: i16) {
  // CHECK: error: 'ptx.shr' operand 'b' must be i32 (a u32 shift amount), got i16
  %0 = ptx.shr b16 %a, %a : i16, i16
  func.return
}

// -----

// max3 / min3 are f32 only.
func.func @max3_i32(%a: i32) {
  // CHECK: error: 'ptx.max3' operand 'a' at position 0 does not verify: Expected attribute f32 but got i32
  %0 = "ptx.max3"(%a, %a, %a) : (i32, i32, i32) -> i32
  func.return
}

// -----

func.func @min3_f64_c(%a: f32, %c: f64) {
  // CHECK: error: 'ptx.min3' operand 'c' at position 2 does not verify: Expected attribute f32 but got f64
  %0 = "ptx.min3"(%a, %a, %c) <{NaN}> : (f32, f32, f64) -> f32
  func.return
}

// -----

func.func @max3_result_f16(%a: f32) {
  // CHECK: error: 'ptx.max3' result 'result' at position 0 does not verify: Expected attribute f32 but got f16
  %0 = "ptx.max3"(%a, %a, %a) <{ftz}> : (f32, f32, f32) -> f16
  func.return
}

// -----

// add.f32x2 works on a packed pair (vector<2xf32>, one .b64 register); its type is implied.
func.func @add_f32x2_on_f32(%a: f32) {
  // CHECK: error: 'ptx.add.f32x2' operand 'lhs' at position 0 does not verify: Expected attribute vector<2xf32> but got f32
  %0 = ptx.add.f32x2 rn %a, %a : f32
  func.return
}

// -----

func.func @add_f32x2_type_word(%a: vector<2xf32>) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:25: error: unexpected qualifier 'f32x2' (expected rn, rz, rm, rp, ftz)
  %0 = ptx.add.f32x2 rn f32x2 %a, %a : vector<2xf32>
  func.return
}

// -----

func.func @add_f32x2_ftz_twice(%a: vector<2xf32>) {
  // CHECK: arith_invalid.mlir:[[# @LINE + 1]]:26: error: '.ftz' given twice (ftz, then ftz)
  %0 = ptx.add.f32x2 ftz ftz %a, %a : vector<2xf32>
  func.return
}

// -----

func.func @pack_i32(%a: i32) {
  // CHECK: error: 'ptx.mov.pack' operand 'lo' at position 0 does not verify: Expected attribute f32 but got i32
  %0 = "ptx.mov.pack"(%a, %a) : (i32, i32) -> vector<2xf32>
  func.return
}

// -----

func.func @pack_result_i64(%a: f32) {
  // CHECK: error: 'ptx.mov.pack' result 'result' at position 0 does not verify: Expected attribute vector<2xf32> but got i64
  %0 = "ptx.mov.pack"(%a, %a) : (f32, f32) -> i64
  func.return
}

// -----

func.func @unpack_f32(%a: f32) {
  // CHECK: error: 'ptx.mov.unpack' operand 'src' at position 0 does not verify: Expected attribute vector<2xf32> but got f32
  %0, %1 = "ptx.mov.unpack"(%a) : (f32) -> (f32, f32)
  func.return
}

// -----

func.func @unpack_hi_f16(%a: vector<2xf32>) {
  // CHECK: error: 'ptx.mov.unpack' result 'hi' at position 1 does not verify: Expected attribute f32 but got f16
  %0, %1 = "ptx.mov.unpack"(%a) : (vector<2xf32>) -> (f32, f16)
  func.return
}

// -----

// div and rem are the integer forms only: floating-point div (.approx/.full/.rnd) is
// another PTX form, not modelled.
func.func @div_float(%a: f32) {
  // CHECK: error: 'ptx.div' '.type' f32 is not valid for 'div' (valid: u16, s16, u32, s32, u64, s64)
  %0 = ptx.div f32 %a, %a : f32
  func.return
}

// -----

func.func @rem_bits(%a: i32) {
  // CHECK: error: 'ptx.rem' '.type' b32 is not valid for 'rem' (valid: u16, s16, u32, s32, u64, s64)
  %0 = ptx.rem b32 %a, %a : i32
  func.return
}

// -----

func.func @div_rnd(%a: i32) {
  // CHECK: error: 'ptx.div' '.rnd' is not valid for 'div' (valid for: add, sub, mul)
  %0 = ptx.div rn s32 %a, %a : i32
  func.return
}

// -----

func.func @rem_operand_type(%a: i32) {
  // CHECK: error: 'ptx.rem' operand 'a' must be i64 for '.type' u64, got i32
  %0 = ptx.rem u64 %a, %a : i32
  func.return
}

// -----

// STDERR: arith_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.mov.pack.b32x2' result 'd' must be i64 or f64 (a .b64 register), got vector<2xf32>
func.func @pack_b32x2_result(%a: i32) {
  // CHECK: error: 'ptx.mov.pack.b32x2' result 'd' must be i64 or f64 (a .b64 register), got vector<2xf32>
  %0 = ptx.mov.pack.b32x2 %a, %a : vector<2xf32>
  func.return
}

// -----

func.func @pack_b32x2_halves(%a: f32) {
  // CHECK: error: 'ptx.mov.pack.b32x2' operand 'lo' at position 0 does not verify: Expected attribute i32 but got f32
  %0 = "ptx.mov.pack.b32x2"(%a, %a) : (f32, f32) -> i64
  func.return
}

// -----

func.func @unpack_b32x2_source(%a: i32) {
  // CHECK: error: 'ptx.mov.unpack.b32x2' operand 's' must be i64 or f64 (a .b64 register), got i32
  %0, %1 = ptx.mov.unpack.b32x2 %a : i32
  func.return
}
