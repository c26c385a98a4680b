// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_80}' 2>&1 | filecheck %s --check-prefix=SM80

// The rules of st.async (PTX ISA, st.async): .type, .vec, the registers, the state
// spaces of 'a' and 'mbar', their alignment; sm_90.

// STDERR: st_async_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.st.async' operand 'b0' must be f32 for '.type' f32, got i32
func.func @register_of_type(%a: !ptx.ptr<shared::cluster>, %i: i32) {
  // CHECK: error: 'ptx.st.async' operand 'b0' must be f32 for '.type' f32, got i32
  ptx.st.async f32 %a, %i mbar %a : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i32
  func.return
}

// -----

func.func @v4_of_64_bits(%a: !ptx.ptr<shared::cluster>, %l: i64) {
  // CHECK: error: 'ptx.st.async' '.v4' needs a 32-bit '.type' (b32, u32, s32, f32), got u64
  ptx.st.async u64 %a, %l, %l, %l, %l mbar %a : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i64, i64, i64, i64
  func.return
}

// -----

func.func @three_values(%a: !ptx.ptr<shared::cluster>, %x: f32) {
  // CHECK: error: 'ptx.st.async' operand 'b' must be 1 value or a '.v2' / '.v4' vector, got 3 values
  ptx.st.async f32 %a, %x, %x, %x mbar %a : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32, f32
  func.return
}

// -----

func.func @no_value(%a: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.st.async' operand 'b' must be 1 value or a '.v2' / '.v4' vector, got 0 values
  "ptx.st.async"(%a, %a) <{type = #ptx<st_async_type f32>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>) -> ()
  func.return
}

// -----

func.func @local_address(%a: !ptx.ptr<shared::cta>, %m: !ptx.ptr<shared::cluster>, %x: f32) {
  // CHECK: error: 'ptx.st.async' operand 'a' must be !ptx.ptr<shared::cluster>, got !ptx.ptr<shared::cta>
  ptx.st.async f32 %a, %x mbar %m : !ptx.ptr<shared::cta>, !ptx.ptr<shared::cluster>, f32
  func.return
}

// -----

func.func @generic_mbarrier(%a: !ptx.ptr<shared::cluster>, %m: !ptx.ptr<generic>, %x: f32) {
  // CHECK: error: 'ptx.st.async' operand 'mbar' must be !ptx.ptr<shared::cluster>, got !ptx.ptr<generic>
  ptx.st.async f32 %a, %x mbar %m : !ptx.ptr<shared::cluster>, !ptx.ptr<generic>, f32
  func.return
}

// -----

// A vector's address must be aligned to the whole vector (8 bytes for .v2.f32).
func.func @misaligned_vector(%rank: i32, %x: f32) {
  ptx.alloc shared @slots size 64 align 16
  ptx.alloc shared @bar size 8 align 8
  %s = ptx.mov.addr @slots : !ptx.ptr<shared::cta>
  %c4 = arith.constant 4 : i32
  %s4 = ptx.add.ptr %s, %c4 : !ptx.ptr<shared::cta>, i32
  %a = ptx.mapa %s4, %rank : !ptx.ptr<shared::cta>
  %b = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %m = ptx.mapa %b, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.st.async' 'a' must be 8-byte aligned, known alignment 4
  ptx.st.async f32 %a, %x, %x mbar %m : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32
  func.return
}

// -----

// The mbarrier object: 8 bytes inside its array.
func.func @mbarrier_outside(%rank: i32, %x: f32) {
  ptx.alloc shared @slots size 64 align 16
  ptx.alloc shared @bar size 8 align 8
  %s = ptx.mov.addr @slots : !ptx.ptr<shared::cta>
  %a = ptx.mapa %s, %rank : !ptx.ptr<shared::cta>
  %b = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b8 = ptx.add.ptr %b, %c8 : !ptx.ptr<shared::cta>, i32
  %m = ptx.mapa %b8, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.st.async' 'mbar' (an 8-byte mbarrier object) must lie inside @bar (8 bytes), got bytes [8, 16)
  ptx.st.async f32 %a, %x mbar %m : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32
  func.return
}

// -----

// A valid st.async needs sm_90 (and PTX ISA 8.1).
func.func @needs_sm90(%a: !ptx.ptr<shared::cluster>, %x: f32) {
  // SM80: st_async_invalid.mlir:[[# @LINE + 1]]:3: error: 'ptx.st.async' 'st.async.shared::cluster.mbarrier::complete_tx::bytes.f32' needs sm_90 and PTX ISA 8.1, but the target is sm_80
  ptx.st.async f32 %a, %x mbar %a : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32
  func.return
}
