// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: st_vec_invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptx.st.vec'
func.func @three(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.st.vec' '.vec' must have 2, 4 or 8 elements (operands 'b'), got 3
  ptx.st.vec f32 %g, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32
  func.return
}

// -----

func.func @one(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.st.vec' '.vec' must have 2, 4 or 8 elements (operands 'b'), got 1
  ptx.st.vec f32 %g, %x : !ptx.ptr<global>, f32
  func.return
}

// -----

func.func @too_wide_shared(%s: !ptx.ptr<shared::cta>, %y: f64) {
  // CHECK: error: 'ptx.st.vec' '.v4.f64' is 256 bits, more than the 128 bits of one vector store to '.space' shared::cta
  ptx.st.vec f64 %s, %y, %y, %y, %y : !ptx.ptr<shared::cta>, f64, f64, f64, f64
  func.return
}

// -----

func.func @too_wide_local(%l: !ptx.ptr<local>, %x: f32) {
  // CHECK: error: 'ptx.st.vec' '.v8.f32' is 256 bits, more than the 128 bits of one vector store to '.space' local
  ptx.st.vec f32 %l, %x, %x, %x, %x, %x, %x, %x, %x : !ptx.ptr<local>, f32, f32, f32, f32, f32, f32, f32, f32
  func.return
}

// -----

func.func @too_wide_global(%g: !ptx.ptr<global>, %y: f64) {
  // CHECK: error: 'ptx.st.vec' '.v8.f64' is 512 bits, more than the 256 bits of one vector store to '.space' global
  ptx.st.vec f64 %g, %y, %y, %y, %y, %y, %y, %y, %y : !ptx.ptr<global>, f64, f64, f64, f64, f64, f64, f64, f64
  func.return
}

// -----

func.func @v8_b16(%g: !ptx.ptr<global>, %h: f16) {
  // CHECK: error: 'ptx.st.vec' '.v8' needs a 32-bit '.type' (b32, u32, s32, f32), got b16
  ptx.st.vec b16 %g, %h, %h, %h, %h, %h, %h, %h, %h : !ptx.ptr<global>, f16, f16, f16, f16, f16, f16, f16, f16
  func.return
}

// -----

func.func @wide_store_wider_registers(%g: !ptx.ptr<global>, %l: i64) {
  // CHECK: error: 'ptx.st.vec' a 256-bit store needs operands 'b' as wide as '.type' f32, got i64
  ptx.st.vec f32 %g, %l, %l, %l, %l, %l, %l, %l, %l : !ptx.ptr<global>, i64, i64, i64, i64, i64, i64, i64, i64
  func.return
}

// -----

func.func @mixed_values(%g: !ptx.ptr<global>, %x: f32, %i: i32) {
  // CHECK: error: 'ptx.st.vec' operand 'b1' must be f32 like 'b0', got i32
  ptx.st.vec b32 %g, %x, %i : !ptx.ptr<global>, f32, i32
  func.return
}

// -----

func.func @narrow_register(%g: !ptx.ptr<global>, %h: f16) {
  // CHECK: error: 'ptx.st.vec' operands 'b' of type f16 cannot hold '.type' f32
  ptx.st.vec f32 %g, %h, %h : !ptx.ptr<global>, f16, f16
  func.return
}

// -----

func.func @misaligned(%x: f32) {
  ptx.alloc shared @tile size 64 align 16
  %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.st.vec' 'a' + 'offset' must be 16-byte aligned, known alignment 8
  ptx.st.vec f32 %s offset 8, %x, %x, %x, %x : !ptx.ptr<shared::cta>, f32, f32, f32, f32
  func.return
}

// -----

func.func @offset_too_big(%g: !ptx.ptr<global>, %x: f32) {
  // CHECK: error: 'ptx.st.vec' 'offset' must fit in 32 bits, got 4294967296
  ptx.st.vec f32 %g offset 4294967296, %x, %x : !ptx.ptr<global>, f32, f32
  func.return
}

// -----

func.func @generic(%p: !ptx.ptr<generic>, %x: f32) {
  // CHECK: error: 'ptx.st.vec' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster> or !ptx.ptr<local>, got !ptx.ptr<generic>
  ptx.st.vec f32 %p, %x, %x : !ptx.ptr<generic>, f32, f32
  func.return
}
