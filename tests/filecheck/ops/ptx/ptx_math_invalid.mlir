// Every verifier and parse rule of the math ops of fused reductions in arith.py (abs, neg,
// sqrt, rcp, ex2, lg2, div.float, fma, and/or/xor/not .pred), rejected with its message:
// '.type' per op, the rounding each '.type' needs or refuses, '.ftz' where the form refuses
// or requires it, operand and result types, and the custom syntax.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// sqrt, rcp, div.float and fma need a rounding qualifier ('.approx', '.full' or '.rnd').
// STDERR: ptx_math_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.sqrt' 'sqrt' with '.type' f32 needs a rounding qualifier (valid: .approx, .rn, .rz, .rm, .rp)
func.func @sqrt_needs_rounding(%a: f32) {
  // CHECK: error: 'ptx.sqrt' 'sqrt' with '.type' f32 needs a rounding qualifier (valid: .approx, .rn, .rz, .rm, .rp)
  %0 = ptx.sqrt f32 %a : f32
  func.return
}

// -----

// sqrt.approx has no f64 form.
func.func @sqrt_approx_f64(%a: f64) {
  // CHECK: error: 'ptx.sqrt' '.approx' is not valid with '.type' f64 for 'sqrt' (valid: .rn, .rz, .rm, .rp)
  %0 = ptx.sqrt approx f64 %a : f64
  func.return
}

// -----

func.func @sqrt_two_roundings(%a: f32) {
  // CHECK: error: 'ptx.sqrt' 'sqrt' takes one rounding qualifier, got .approx, .rn
  %0 = ptx.sqrt rn approx f32 %a : f32
  func.return
}

// -----

// No half-precision sqrt in PTX.
func.func @sqrt_f16(%a: f16) {
  // CHECK: error: 'ptx.sqrt' '.type' f16 is not valid for 'sqrt' (valid: f32, f64)
  %0 = ptx.sqrt rn f16 %a : f16
  func.return
}

// -----

// '.ftz' is for the f32 (and f16) forms only.
func.func @sqrt_ftz_f64(%a: f64) {
  // CHECK: error: 'ptx.sqrt' '.ftz' is not valid for 'sqrt.rn.f64'
  %0 = ptx.sqrt rn ftz f64 %a : f64
  func.return
}

// -----

// rcp.approx.f64 exists only as rcp.approx.ftz.f64.
func.func @rcp_approx_f64_needs_ftz(%a: f64) {
  // CHECK: error: 'ptx.rcp' '.ftz' is required for 'rcp.approx.f64'
  %0 = ptx.rcp approx f64 %a : f64
  func.return
}

// -----

// '.full' is div's alone.
func.func @rcp_full(%a: f32) {
  // CHECK: error: 'ptx.rcp' '.full' is not valid with '.type' f32 for 'rcp' (valid: .approx, .rn, .rz, .rm, .rp)
  %0 = ptx.rcp full f32 %a : f32
  func.return
}

// -----

// abs and neg take the signed integer types and the float ones.
func.func @abs_u32(%a: i32) {
  // CHECK: error: 'ptx.abs' '.type' u32 is not valid for 'abs' (valid: s16, s32, s64, f32, f64, f16, bf16)
  %0 = ptx.abs u32 %a : i32
  func.return
}

// -----

func.func @abs_ftz_s32(%a: i32) {
  // CHECK: error: 'ptx.abs' '.ftz' is not valid for 'abs.s32'
  %0 = ptx.abs ftz s32 %a : i32
  func.return
}

// -----

// abs.bf16 / neg.bf16 have no '.ftz'.
func.func @abs_ftz_bf16(%a: bf16) {
  // CHECK: error: 'ptx.abs' '.ftz' is not valid for 'abs.bf16'
  %0 = ptx.abs ftz bf16 %a : bf16
  func.return
}

// -----

// abs and neg take no rounding.
func.func @neg_rn_f32(%a: f32) {
  // CHECK: error: 'ptx.neg' '.rn' is not valid with '.type' f32 for 'neg' (valid: none)
  %0 = ptx.neg rn f32 %a : f32
  func.return
}

// -----

func.func @neg_ftz_f64(%a: f64) {
  // CHECK: error: 'ptx.neg' '.ftz' is not valid for 'neg.f64'
  %0 = ptx.neg ftz f64 %a : f64
  func.return
}

// -----

// ex2 and lg2 are '.approx' only.
func.func @ex2_f32_needs_approx(%a: f32) {
  // CHECK: error: 'ptx.ex2' 'ex2' with '.type' f32 needs a rounding qualifier (valid: .approx)
  %0 = ptx.ex2 f32 %a : f32
  func.return
}

// -----

// ex2.approx.bf16 exists only with '.ftz'.
func.func @ex2_bf16_needs_ftz(%a: bf16) {
  // CHECK: error: 'ptx.ex2' '.ftz' is required for 'ex2.approx.bf16'
  %0 = ptx.ex2 approx bf16 %a : bf16
  func.return
}

// -----

// ... and ex2.approx.f16 only without.
func.func @ex2_ftz_f16(%a: f16) {
  // CHECK: error: 'ptx.ex2' '.ftz' is not valid for 'ex2.approx.f16'
  %0 = ptx.ex2 approx ftz f16 %a : f16
  func.return
}

// -----

func.func @lg2_rn(%a: f32) {
  // CHECK: error: 'ptx.lg2' '.rn' is not valid with '.type' f32 for 'lg2' (valid: .approx)
  %0 = ptx.lg2 rn f32 %a : f32
  func.return
}

// -----

func.func @lg2_f64(%a: f64) {
  // CHECK: error: 'ptx.lg2' '.type' f64 is not valid for 'lg2' (valid: f32)
  %0 = ptx.lg2 approx f64 %a : f64
  func.return
}

// -----

func.func @fma_needs_rounding(%a: f32) {
  // CHECK: error: 'ptx.fma' 'fma' with '.type' f32 needs a rounding qualifier (valid: .rn, .rz, .rm, .rp)
  %0 = ptx.fma f32 %a, %a, %a : f32
  func.return
}

// -----

// fma.f16 takes '.rn' only.
func.func @fma_rz_f16(%a: f16) {
  // CHECK: error: 'ptx.fma' '.rz' is not valid with '.type' f16 for 'fma' (valid: .rn)
  %0 = ptx.fma rz f16 %a, %a, %a : f16
  func.return
}

// -----

// fma is floating point only (mad is the integer form, not modelled).
func.func @fma_s32(%a: i32) {
  // CHECK: error: 'ptx.fma' '.type' s32 is not valid for 'fma' (valid: f32, f64, f16, bf16)
  %0 = ptx.fma rn s32 %a, %a, %a : i32
  func.return
}

// -----

// div.full and div.approx are f32 only.
func.func @div_float_full_f64(%a: f64) {
  // CHECK: error: 'ptx.div.float' '.full' is not valid with '.type' f64 for 'div' (valid: .rn, .rz, .rm, .rp)
  %0 = ptx.div.float full f64 %a, %a : f64
  func.return
}

// -----

// ptx.div.float is the floating-point div; ptx.div the integer one.
func.func @div_float_s32(%a: i32) {
  // CHECK: error: 'ptx.div.float' '.type' s32 is not valid for 'div' (valid: f32, f64)
  %0 = ptx.div.float rn s32 %a, %a : i32
  func.return
}

// -----

// Operands and result have the register type of '.type'.
func.func @operand_type(%a: f64) {
  // CHECK: error: 'ptx.sqrt' operand 'a' must be f32 for '.type' f32, got f64
  %0 = ptx.sqrt rn f32 %a : f64
  func.return
}

// -----

func.func @fma_operand_type(%a: f32, %b: f64) {
  // CHECK: error: 'ptx.fma' operand 'c' at position 2 does not verify: attribute f32 expected from variable 'T', but got f64
  %0 = "ptx.fma"(%a, %a, %b) <{rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32, f32, f64) -> f32
  func.return
}

// -----

// The .pred logic ops take and give predicates (i1).
func.func @and_pred_i32(%a: i32) {
  // CHECK: error: 'ptx.and.pred' operand 'lhs' at position 0 does not verify: Expected attribute i1 but got i32
  %0 = "ptx.and.pred"(%a, %a) : (i32, i32) -> i1
  func.return
}

// -----

func.func @not_pred_result(%a: i1) {
  // CHECK: error: 'ptx.not.pred' result 'result' at position 0 does not verify: Expected attribute i1 but got i32
  %0 = "ptx.not.pred"(%a) : (i1) -> i32
  func.return
}

// -----

// Custom syntax: the rounding, '.ftz' and '.type' are words before the operands, each at most once.
func.func @missing_type(%a: f32) {
  // CHECK: ptx_math_invalid.mlir:[[# @LINE + 1]]:20: error: expected a '.type' qualifier (u16, s16, u32, s32, u64, s64, b16, b32, b64, f16, bf16, f32, f64)
  %0 = ptx.sqrt rn %a : f32
  func.return
}

// -----

func.func @unknown_qualifier(%a: f32) {
  // CHECK: ptx_math_invalid.mlir:[[# @LINE + 1]]:17: error: unexpected qualifier 'sat' (expected rn, rz, rm, rp, approx, full, ftz, or a type (u16, s16, u32, s32, u64, s64, b16, b32, b64, f16, bf16, f32, f64))
  %0 = ptx.sqrt sat f32 %a : f32
  func.return
}

// -----

func.func @ftz_twice(%a: f32) {
  // CHECK: ptx_math_invalid.mlir:[[# @LINE + 1]]:28: error: '.ftz' given twice (ftz, then ftz)
  %0 = ptx.sqrt approx ftz ftz f32 %a : f32
  func.return
}

// -----

func.func @fma_two_operands(%a: f32) {
  // CHECK: ptx_math_invalid.mlir:[[# @LINE + 1]]:30: error: Expected ','
  %0 = ptx.fma rn f32 %a, %a : f32
  func.return
}
