// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: ld_vec_invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptx.ld.vec'
func.func @nc_shared(%s: !ptx.ptr<shared::cta>) {
  // CHECK: error: 'ptx.ld.vec' '.nc' is only valid with '.space' global, got '.space' shared::cta
  %a:4 = ptx.ld.vec nc f32 %s : !ptx.ptr<shared::cta> -> f32, f32, f32, f32
  func.return
}

// -----

func.func @three(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' '.vec' must have 2, 4 or 8 elements (results), got 3
  %a:3 = ptx.ld.vec f32 %g : !ptx.ptr<global> -> f32, f32, f32
  func.return
}

// -----

func.func @one(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' '.vec' must have 2, 4 or 8 elements (results), got 1
  %a = ptx.ld.vec f32 %g : !ptx.ptr<global> -> f32
  func.return
}

// -----

func.func @too_wide_shared(%s: !ptx.ptr<shared::cta>) {
  // CHECK: error: 'ptx.ld.vec' '.v4.f64' is 256 bits, more than the 128 bits of one vector load from '.space' shared::cta
  %a:4 = ptx.ld.vec f64 %s : !ptx.ptr<shared::cta> -> f64, f64, f64, f64
  func.return
}

// -----

func.func @too_wide_global(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' '.v8.f64' is 512 bits, more than the 256 bits of one vector load from '.space' global
  %a:8 = ptx.ld.vec f64 %g : !ptx.ptr<global> -> f64, f64, f64, f64, f64, f64, f64, f64
  func.return
}

// -----

func.func @v8_b16(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' '.v8' needs a 32-bit '.type' (b32, u32, s32, f32), got b16
  %a:8 = ptx.ld.vec b16 %g : !ptx.ptr<global> -> f16, f16, f16, f16, f16, f16, f16, f16
  func.return
}

// -----

func.func @wide_load_wider_registers(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' a 256-bit load needs results 'd' as wide as '.type' f32, got i64
  %a:8 = ptx.ld.vec f32 %g : !ptx.ptr<global> -> i64, i64, i64, i64, i64, i64, i64, i64
  func.return
}

// -----

func.func @mixed_results(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' result 'd1' must be f32 like 'd0', got i32
  %a:2 = ptx.ld.vec b32 %g : !ptx.ptr<global> -> f32, i32
  func.return
}

// -----

func.func @narrow_register(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' results 'd' of type f16 cannot hold '.type' f32
  %a:2 = ptx.ld.vec f32 %g : !ptx.ptr<global> -> f16, f16
  func.return
}

// -----

func.func @misaligned() {
  ptx.alloc shared @tile size 64 align 16
  %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.ld.vec' 'a' + 'offset' must be 16-byte aligned, known alignment 8
  %a:4 = ptx.ld.vec f32 %s offset 8 : !ptx.ptr<shared::cta> -> f32, f32, f32, f32
  func.return
}

// -----

func.func @offset_too_big(%g: !ptx.ptr<global>) {
  // CHECK: error: 'ptx.ld.vec' 'offset' must fit in 32 bits, got 4294967296
  %a:2 = ptx.ld.vec f32 %g offset 4294967296 : !ptx.ptr<global> -> f32, f32
  func.return
}

// -----

func.func @generic(%p: !ptx.ptr<generic>) {
  // CHECK: error: 'ptx.ld.vec' operand 'a' must be !ptx.ptr<global> or !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster> or !ptx.ptr<local>, got !ptx.ptr<generic>
  %a:2 = ptx.ld.vec f32 %p : !ptx.ptr<generic> -> f32, f32
  func.return
}
