// ld.vec (ops/ptx/memory.py): custom and generic syntax round trip, and the PTX line.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -t 'ptx{target=sm_100a}' | filecheck %s --check-prefix=PTX
// RUN: not bulkred-opt %s -t 'ptx{target=sm_90a}' 2>&1 | filecheck %s --check-prefix=SM90A

// CHECK-LABEL: func.func @ld_vec
// GENERIC-LABEL: sym_name = "ld_vec"
// PTX-LABEL: .visible .entry ld_vec(
func.func @ld_vec(%g: !ptx.ptr<global>) {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = ptx.ld.vec nc f32 %g offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
  // GENERIC: "ptx.ld.vec"(%g) <{nc, type = #ptx<ldst_type f32>, offset = 16 : i64}> : (!ptx.ptr<global>) -> (f32, f32, f32, f32)
  // PTX: ld.global.nc.v4.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}+16];
  %a:4 = ptx.ld.vec nc f32 %g offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
  // CHECK: ptx.ld.vec b32 %g : !ptx.ptr<global> -> i32, i32, i32, i32
  // PTX: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %b:4 = ptx.ld.vec b32 %g : !ptx.ptr<global> -> i32, i32, i32, i32
  // CHECK: ptx.ld.vec nc f64 %g offset -16 : !ptx.ptr<global> -> f64, f64
  // PTX: ld.global.nc.v2.f64 {%fd{{[0-9]+}}, %fd{{[0-9]+}}}, [%rd{{[0-9]+}}+-16];
  %c:2 = ptx.ld.vec nc f64 %g offset -16 : !ptx.ptr<global> -> f64, f64
  // CHECK: ptx.ld.vec b16 %g : !ptx.ptr<global> -> f16, f16, f16, f16
  // PTX: ld.global.v4.b16 {%h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %d:4 = ptx.ld.vec b16 %g : !ptx.ptr<global> -> f16, f16, f16, f16
  // CHECK: ptx.ld.vec b16 %g : !ptx.ptr<global> -> bf16, bf16
  // PTX: ld.global.v2.b16 {%h{{[0-9]+}}, %h{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %e:2 = ptx.ld.vec b16 %g : !ptx.ptr<global> -> bf16, bf16
  // CHECK: ptx.ld.vec u16 %g : !ptx.ptr<global> -> i16, i16, i16, i16
  // PTX: ld.global.v4.u16 {%rs{{[0-9]+}}, %rs{{[0-9]+}}, %rs{{[0-9]+}}, %rs{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %f:4 = ptx.ld.vec u16 %g : !ptx.ptr<global> -> i16, i16, i16, i16
  func.return
}

// A kernel cannot take shared or local addresses: declare the arrays.
// CHECK-LABEL: func.func @ld_vec_spaces
// PTX-LABEL: .visible .entry ld_vec_spaces(
func.func @ld_vec_spaces() {
  ptx.alloc shared @tile size 64 align 16
  ptx.alloc local @scratch size 64 align 16
  %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %l = ptx.mov.addr @scratch : !ptx.ptr<local>
  // CHECK: ptx.ld.vec f32 %s offset 32 : !ptx.ptr<shared::cta> -> f32, f32, f32, f32
  // PTX: ld.shared::cta.v4.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%r{{[0-9]+}}+32];
  %a:4 = ptx.ld.vec f32 %s offset 32 : !ptx.ptr<shared::cta> -> f32, f32, f32, f32
  // CHECK: ptx.ld.vec u32 %l offset 8 : !ptx.ptr<local> -> i32, i32
  // PTX: ld.local.v2.u32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}+8];
  %b:2 = ptx.ld.vec u32 %l offset 8 : !ptx.ptr<local> -> i32, i32
  func.return
}

// 256-bit loads from global memory: sm_100 and PTX ISA 8.8.
// CHECK-LABEL: func.func @ld_vec_256
// PTX-LABEL: .visible .entry ld_vec_256(
// SM90A: ld_vec.mlir:[[# @LINE + 4]]:3: error: 'ptx.ld.vec' 'ld.global.nc.v8.f32' needs sm_100 and PTX ISA 8.8, but the target is sm_90a
func.func @ld_vec_256(%g: !ptx.ptr<global>) {
  // CHECK: ptx.ld.vec nc f32 %g : !ptx.ptr<global> -> f32, f32, f32, f32, f32, f32, f32, f32
  // PTX: ld.global.nc.v8.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %a:8 = ptx.ld.vec nc f32 %g : !ptx.ptr<global> -> f32, f32, f32, f32, f32, f32, f32, f32
  // CHECK: ptx.ld.vec b64 %g : !ptx.ptr<global> -> i64, i64, i64, i64
  // PTX: ld.global.v4.b64 {%rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}}, [%rd{{[0-9]+}}];
  %b:4 = ptx.ld.vec b64 %g : !ptx.ptr<global> -> i64, i64, i64, i64
  func.return
}
