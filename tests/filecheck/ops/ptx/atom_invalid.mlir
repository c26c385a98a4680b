// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: atom_invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptx.atom'
func.func @atom_inc_s32(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: 'ptx.atom' '.type' s32 is not valid with '.op' inc (valid: u32)
  %0 = ptx.atom inc s32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// -----

func.func @atom_and_u32(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: 'ptx.atom' '.type' u32 is not valid with '.op' and (valid: b32, b64)
  %0 = ptx.atom and u32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// -----

func.func @atom_add_s64(%g: !ptx.ptr<global>, %l: i64) {
  // CHECK: error: 'ptx.atom' '.type' s64 is not valid with '.op' add (valid: u32, s32, u64, f32, f64, f16, bf16)
  %0 = ptx.atom add s64 %g, %l : !ptx.ptr<global>, i64
  func.return
}

// -----

func.func @atom_min_f32(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.atom' '.type' f32 is not valid with '.op' min (valid: u32, s32, u64, s64)
  %0 = ptx.atom min f32 %g, %x : !ptx.ptr<global>, f32
  func.return
}

// -----

func.func @atom_exch_f32(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.atom' '.type' f32 is not valid with '.op' exch (valid: b32, b64)
  %0 = ptx.atom exch f32 %g, %x : !ptx.ptr<global>, f32
  func.return
}

// -----

func.func @atom_value_type(%g: !ptx.ptr<global>, %l: i64) {
  // CHECK: error: 'ptx.atom' operand 'b' must be i32 for '.type' u32, got i64
  %0 = ptx.atom add u32 %g, %l : !ptx.ptr<global>, i64
  func.return
}

// -----

func.func @atom_local(%l: !ptx.ptr<local>, %i: i32) {
  // CHECK: error: 'ptx.atom' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster> or !ptx.ptr<generic> for atom, got !ptx.ptr<local>
  %0 = ptx.atom add u32 %l, %i : !ptx.ptr<local>, i32
  func.return
}

// -----

func.func @atom_address_i64(%a: i64, %i: i32) {
  // CHECK: error: 'ptx.atom' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster> or !ptx.ptr<generic> for atom, got i64
  %0 = ptx.atom add u32 %a, %i : i64, i32
  func.return
}

// -----

func.func @atom_misaligned() {
  ptx.alloc shared @c size 16 align 4
  %s = ptx.mov.addr @c : !ptx.ptr<shared::cta>
  %l = ptx.mov.imm 1 : i64
  // CHECK: error: 'ptx.atom' 'a' must be 8-byte aligned, known alignment 4
  %0 = ptx.atom add u64 %s, %l : !ptx.ptr<shared::cta>, i64
  func.return
}

// -----

func.func @atom_bad_sem(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: Expected `relaxed`, `acquire`, `release`, or `acq_rel`.
  %0 = ptx.atom sem sc add u32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// -----

func.func @red_exch(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: Expected `and`, `or`, `xor`, `add`, `inc`, `dec`, `min`, or `max`.
  ptx.red exch b32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// -----

func.func @red_acquire(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: Expected `relaxed`, or `release`.
  ptx.red sem acquire add u32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// -----

func.func @red_dec_u64(%g: !ptx.ptr<global>, %l: i64) {
  // CHECK: error: 'ptx.red' '.type' u64 is not valid with '.op' dec (valid: u32)
  ptx.red dec u64 %g, %l : !ptx.ptr<global>, i64
  func.return
}

// -----

func.func @red_vec_min(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.red' '.op' min is not valid with '.vec' v4 and '.type' f32 (valid: add)
  ptx.red min f32 %g, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32
  func.return
}

// -----

func.func @red_vec_f64(%g: !ptx.ptr<global>, %y: f64) {
  // CHECK: error: 'ptx.red' '.type' f64 is not valid with '.vec' v2 (valid: f32, f16, bf16)
  ptx.red add f64 %g, %y, %y : !ptx.ptr<global>, f64, f64
  func.return
}

// -----

func.func @red_vec_u32(%g: !ptx.ptr<global>, %i: i32) {
  // CHECK: error: 'ptx.red' '.type' u32 is not valid with '.vec' v2 (valid: f32, f16, bf16)
  ptx.red add u32 %g, %i, %i : !ptx.ptr<global>, i32, i32
  func.return
}

// -----

func.func @red_vec_shared(%x: f32) {
  ptx.alloc shared @acc size 16 align 16
  %s = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.red' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<generic> for '.vec' v4, got !ptx.ptr<shared::cta>
  ptx.red add f32 %s, %x, %x, %x, %x : !ptx.ptr<shared::cta>, f32, f32, f32, f32
  func.return
}

// -----

func.func @red_three_values(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.red' operand 'b' must be 1, 2, 4 or 8 values, got 3
  ptx.red add f32 %g, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32
  func.return
}

// -----

func.func @red_no_value(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.red' operand 'b' must be 1, 2, 4 or 8 values, got 0
  "ptx.red"(%g) <{op = #ptx<red_op add>, type = #ptx<atom_type f32>}> : (!ptx.ptr<global>) -> ()
  func.return
}

// -----

func.func @red_vec_value_type(%g: !ptx.ptr<global>, %x: f32, %i: i32) {
  // CHECK: error: 'ptx.red' operand 'b1' must be f32 for '.type' f32, got i32
  ptx.red add f32 %g, %x, %i : !ptx.ptr<global>, f32, i32
  func.return
}

// -----

func.func @red_vec_misaligned() {
  %g = ptx.mov.imm 8 : i64
  %p = ptx.mov %g : i64 -> !ptx.ptr<generic>
  %x = ptx.mov.imm 1.0 : f32
  // CHECK: error: 'ptx.red' 'a' must be 16-byte aligned, known alignment 8
  ptx.red add f32 %p, %x, %x, %x, %x : !ptx.ptr<generic>, f32, f32, f32, f32
  func.return
}

// -----

func.func @atom_f16_without_noftz(%g: !ptx.ptr<global>, %h: f16) {
  // CHECK: error: 'ptx.atom' '.noftz' is required with '.type' f16
  %0 = ptx.atom add f16 %g, %h : !ptx.ptr<global>, f16
  func.return
}

// -----

func.func @atom_noftz_f32(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.atom' '.noftz' is only valid with '.type' f16 or bf16, got '.type' f32
  %0 = ptx.atom add noftz f32 %g, %x : !ptx.ptr<global>, f32
  func.return
}

// -----

func.func @atom_min_f16(%g: !ptx.ptr<global>, %h: f16) {
  // CHECK: error: 'ptx.atom' '.type' f16 is not valid with '.op' min (valid: u32, s32, u64, s64)
  %0 = ptx.atom min noftz f16 %g, %h : !ptx.ptr<global>, f16
  func.return
}

// -----

func.func @red_bf16_without_noftz(%g: !ptx.ptr<global>, %h: bf16) {
  // CHECK: error: 'ptx.red' '.noftz' is required with '.type' bf16
  ptx.red max bf16 %g, %h, %h : !ptx.ptr<global>, bf16, bf16
  func.return
}

// -----

func.func @red_v8_f32(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.red' '.type' f32 is not valid with '.vec' v8 (valid: f16, bf16)
  ptx.red add f32 %g, %x, %x, %x, %x, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32, f32, f32, f32, f32
  func.return
}

// -----

func.func @red_vec_f16_and(%g: !ptx.ptr<global>, %h: f16) {
  // CHECK: error: 'ptx.red' '.op' and is not valid with '.vec' v2 and '.type' f16 (valid: add, min, max)
  ptx.red and noftz f16 %g, %h, %h : !ptx.ptr<global>, f16, f16
  func.return
}

// -----

func.func @red_f16_value_type(%g: !ptx.ptr<global>, %h: bf16) {
  // CHECK: error: 'ptx.red' operand 'b' must be f16 for '.type' f16, got bf16
  ptx.red add noftz f16 %g, %h : !ptx.ptr<global>, bf16
  func.return
}

// -----

func.func @fence_bad_sem() {
  // CHECK: error: Expected `sc`, or `acq_rel`.
  ptx.fence relaxed gpu
  func.return
}

// -----

func.func @fence_no_scope() {
  // CHECK: error: Expected `cta`, `cluster`, `gpu`, or `sys`.
  ptx.fence sc
  func.return
}

// -----

func.func @membar_gpu() {
  // CHECK: error: Expected `cta`, `gl`, or `sys`.
  ptx.membar gpu
  func.return
}
