// Verifier messages of the backend ops (ops/ptx/memory.py, ops/ptx/control.py).
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: backend_ops_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.ld'
func.func @ld_too_narrow(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld' result 'd' of type f32 cannot hold '.type' f64
  %v = ptx.ld f64 %g : !ptx.ptr<global> -> f32
  func.return
}

// -----

func.func @ld_unsigned_into_float(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld' result 'd' of type f32 cannot hold '.type' u32
  %v = ptx.ld u32 %g : !ptx.ptr<global> -> f32
  func.return
}

// -----

func.func @ld_generic(%g: !ptx.ptr<generic>) {
  // CHECK: error: 'ptx.ld' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster> or !ptx.ptr<local>, got !ptx.ptr<generic>
  %v = ptx.ld f32 %g : !ptx.ptr<generic> -> f32
  func.return
}

// -----

func.func @st_offset_too_large(%g: !ptx.ptr<global>, %v: f32) {
  // CHECK: error: 'ptx.st' 'offset' must fit in 32 bits, got 4294967296
  ptx.st f32 %g offset 4294967296, %v : !ptx.ptr<global>, f32
  func.return
}

// -----

func.func @st_predicate(%g: !ptx.ptr<global>, %p: i1) {
  // CHECK: error: 'ptx.st' operand 'b' of type i1 cannot hold '.type' b8
  ptx.st b8 %g, %p : !ptx.ptr<global>, i1
  func.return
}

// -----

func.func @add_ptr_width(%s: !ptx.ptr<shared::cta>, %i: i64) {
  // CHECK: error: 'ptx.add.ptr' operand 'b' must be i32 for a 32-bit address !ptx.ptr<shared::cta>, got i64
  %q = ptx.add.ptr %s, %i : !ptx.ptr<shared::cta>, i64
  func.return
}

// -----

func.func @cvta_from_i32(%a: i32) {
  // CHECK: error: 'ptx.cvta.to.global' operand 'a' must be i64 or !ptx.ptr<generic>, got i32
  %g = ptx.cvta.to.global %a : i32
  func.return
}

// -----

func.func @alloc_size() {
  // CHECK: error: 'ptx.alloc' 'size' must be at least 1 byte, got 0
  ptx.alloc local @empty size 0 align 16
  func.return
}

// -----

func.func @alloc_align() {
  // CHECK: error: 'ptx.alloc' 'align' must be a power of two, got 24
  ptx.alloc shared @odd size 64 align 24
  func.return
}

// -----

// ptxas crashes on an unused .local array aligned to 2**24 or more, and reports
// "Constant overflow" for 2**32.
func.func @alloc_align_too_large_local() {
  // CHECK: error: 'ptx.alloc' 'align' must be at most 8388608, got 2147483648
  ptx.alloc local @scratch size 16 align 2147483648
  func.return
}

// -----

func.func @alloc_align_too_large_shared() {
  // CHECK: error: 'ptx.alloc' 'align' must be a power of two, got 4294967295
  ptx.alloc shared @tile size 256 align 4294967295
  func.return
}

// -----

func.func @alloc_align_pow2_too_large_shared() {
  // CHECK: error: 'ptx.alloc' 'align' must be at most 8388608, got 4294967296
  ptx.alloc shared @tile size 256 align 4294967296
  func.return
}

// -----

func.func @alloc_align_negative() {
  // CHECK: error: 'ptx.alloc' 'align' must be a power of two, got -16
  ptx.alloc shared @tile size 256 align -16
  func.return
}

// -----

func.func @alloc_local_too_large() {
  // CHECK: error: 'ptx.alloc' 'size' of a .local array must be at most 524288 bytes, got 524289
  ptx.alloc local @big size 524289 align 16
  func.return
}

// -----

// Two declarations of one name in a kernel (ptxas: "Duplicate definition"): the second
// is the error, in another space too.
func.func @alloc_duplicate() {
  ptx.alloc shared @tile size 64 align 16
  ptx.alloc local @other size 16 align 16
  // CHECK: error: 'ptx.alloc' 'sym_name' @tile is already declared in this kernel
  ptx.alloc local @tile size 16 align 16
  func.return
}

// -----

func.func @addr_of_nothing() {
  // CHECK: error: 'ptx.mov.addr' 'symbol' @missing names no ptx.alloc in this kernel
  %a = ptx.mov.addr @missing : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @addr_wrong_space() {
  ptx.alloc local @buf size 16 align 16
  // CHECK: error: 'ptx.mov.addr' result 'd' must be !ptx.ptr<local> for @buf, got !ptx.ptr<shared::cta>
  %a = ptx.mov.addr @buf : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @imm_type_mismatch() {
  // CHECK: error: 'ptx.mov.imm' 'value' type i32 must equal the result type i64
  %c = "ptx.mov.imm"() <{value = 1 : i32}> : () -> i64
  func.return
}

// -----

func.func @imm_float_in_int() {
  // CHECK: error: 'ptx.mov.imm' 'value' type f32 must equal the result type i32
  %c = "ptx.mov.imm"() <{value = 1.0 : f32}> : () -> i32
  func.return
}

// -----

func.func @mov_width(%a: i32) {
  // CHECK: error: 'ptx.mov' result 'd' (i64) must be as wide as operand 'a' (i32)
  %b = ptx.mov %a : i32 -> i64
  func.return
}

// -----

func.func @setp_unsigned_on_signed(%a: i32) {
  // CHECK: error: 'ptx.setp' '.CmpOp' lo is not valid with '.type' s32 (valid: eq, ne, lt, le, gt, ge)
  %p = ptx.setp lo s32 %a, %a : i32, i32
  func.return
}

// -----

func.func @setp_order_on_bits(%a: i32) {
  // CHECK: error: 'ptx.setp' '.CmpOp' lt is not valid with '.type' b32 (valid: eq, ne)
  %p = ptx.setp lt b32 %a, %a : i32, i32
  func.return
}

// -----

func.func @setp_width(%a: i64) {
  // CHECK: error: 'ptx.setp' operand 'a' of type i64 cannot hold '.type' s32
  %p = ptx.setp lt s32 %a, %a : i64, i64
  func.return
}

// -----

func.func @selp_width(%a: i32, %b: i32, %p: i1) {
  // CHECK: error: 'ptx.selp' 'a' of type i32 cannot hold '.type' b64
  %s = ptx.selp b64 %a, %b, %p : i32, i32 -> i32
  func.return
}

// -----

func.func @cvt_needs_rounding(%a: i32) {
  // CHECK: error: 'ptx.cvt' '.rnd' none is not valid for '.dtype' f32 from '.atype' s32 (valid: rn, rz, rm, rp)
  %f = ptx.cvt f32 s32 %a : i32 -> f32
  func.return
}

// -----

func.func @cvt_int_rounding_on_int(%a: i32) {
  // CHECK: error: 'ptx.cvt' '.rnd' rni is not valid for '.dtype' s64 from '.atype' s32 (valid: none)
  %f = ptx.cvt rni s64 s32 %a : i32 -> i64
  func.return
}

// -----

func.func @cvt_bf16_from_u8(%a: i16) {
  // CHECK: error: 'ptx.cvt' '.dtype' bf16 cannot be converted from '.atype' u8
  %f = ptx.cvt rn bf16 u8 %a : i16 -> bf16
  func.return
}

// -----

func.func @cvt_operand_type(%a: i64) {
  // CHECK: error: 'ptx.cvt' 'a' must be i32 for '.atype' s32, got i64
  %f = ptx.cvt s64 s32 %a : i64 -> i64
  func.return
}

// -----

func.func @bra_arguments(%a: i64) {
  // CHECK: error: 'ptx.bra' 'arguments' passes (i64) to a block taking (i32)
  ptx.bra ^bb1(%a : i64)
^bb1(%b: i32):
  ptx.ret
}

// -----

func.func @cond_bra_with_arguments(%p: i1) {
  // CHECK: error: 'ptx.bra.cond' 'then_block' passes () to a block taking (i32)
  ptx.bra.cond %p, ^bb1, ^bb2
^bb1(%b: i32):
  ptx.ret
^bb2:
  ptx.ret
}
