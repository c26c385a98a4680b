// st.vec (ops/ptx/memory.py): custom and generic syntax round trip, and the PTX line.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -t 'ptx{target=sm_100a}' | filecheck %s --check-prefix=PTX
// RUN: not bulkred-opt %s -t 'ptx{target=sm_90a}' 2>&1 | filecheck %s --check-prefix=SM90A

// CHECK-LABEL: func.func @st_vec
// GENERIC-LABEL: sym_name = "st_vec"
// PTX-LABEL: .visible .entry st_vec(
func.func @st_vec(%g: !ptx.ptr<global>, %x: f32, %i: i32, %y: f64, %h: f16, %b: bf16, %s: i16, %l: i64) {
  // CHECK: ptx.st.vec f32 %g offset 16, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32
  // GENERIC: "ptx.st.vec"(%g, %x, %x, %x, %x) <{type = #ptx<ldst_type f32>, offset = 16 : i64}> : (!ptx.ptr<global>, f32, f32, f32, f32) -> ()
  // PTX: st.global.v4.f32 [%rd{{[0-9]+}}+16], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
  ptx.st.vec f32 %g offset 16, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32
  // CHECK: ptx.st.vec b32 %g, %i, %i, %i, %i : !ptx.ptr<global>, i32, i32, i32, i32
  // PTX: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
  ptx.st.vec b32 %g, %i, %i, %i, %i : !ptx.ptr<global>, i32, i32, i32, i32
  // CHECK: ptx.st.vec f64 %g offset -16, %y, %y : !ptx.ptr<global>, f64, f64
  // PTX: st.global.v2.f64 [%rd{{[0-9]+}}+-16], {%fd{{[0-9]+}}, %fd{{[0-9]+}}};
  ptx.st.vec f64 %g offset -16, %y, %y : !ptx.ptr<global>, f64, f64
  // CHECK: ptx.st.vec b16 %g, %h, %h, %h, %h : !ptx.ptr<global>, f16, f16, f16, f16
  // PTX: st.global.v4.b16 [%rd{{[0-9]+}}], {%h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}};
  ptx.st.vec b16 %g, %h, %h, %h, %h : !ptx.ptr<global>, f16, f16, f16, f16
  // CHECK: ptx.st.vec b16 %g, %b, %b : !ptx.ptr<global>, bf16, bf16
  // PTX: st.global.v2.b16 [%rd{{[0-9]+}}], {%h{{[0-9]+}}, %h{{[0-9]+}}};
  ptx.st.vec b16 %g, %b, %b : !ptx.ptr<global>, bf16, bf16
  // CHECK: ptx.st.vec u16 %g, %s, %s, %s, %s : !ptx.ptr<global>, i16, i16, i16, i16
  // PTX: st.global.v4.u16 [%rd{{[0-9]+}}], {%rs{{[0-9]+}}, %rs{{[0-9]+}}, %rs{{[0-9]+}}, %rs{{[0-9]+}}};
  ptx.st.vec u16 %g, %s, %s, %s, %s : !ptx.ptr<global>, i16, i16, i16, i16
  // A register wider than '.type' (as for ptx.st): the low 32 bits of each.
  // CHECK: ptx.st.vec u32 %g, %l, %l : !ptx.ptr<global>, i64, i64
  // PTX: st.global.v2.u32 [%rd{{[0-9]+}}], {%rd{{[0-9]+}}, %rd{{[0-9]+}}};
  ptx.st.vec u32 %g, %l, %l : !ptx.ptr<global>, i64, i64
  func.return
}

// A kernel cannot take shared or local addresses: declare the arrays.
// CHECK-LABEL: func.func @st_vec_spaces
// PTX-LABEL: .visible .entry st_vec_spaces(
func.func @st_vec_spaces(%x: f32, %i: i32) {
  ptx.alloc shared @tile size 64 align 16
  ptx.alloc local @scratch size 64 align 16
  %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %l = ptx.mov.addr @scratch : !ptx.ptr<local>
  %c = ptx.mov %s : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK: ptx.st.vec f32 %s offset 32, %x, %x, %x, %x : !ptx.ptr<shared::cta>, f32, f32, f32, f32
  // PTX: st.shared::cta.v4.f32 [%r{{[0-9]+}}+32], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
  ptx.st.vec f32 %s offset 32, %x, %x, %x, %x : !ptx.ptr<shared::cta>, f32, f32, f32, f32
  // CHECK: ptx.st.vec u32 %l offset 8, %i, %i : !ptx.ptr<local>, i32, i32
  // PTX: st.local.v2.u32 [%rd{{[0-9]+}}+8], {%r{{[0-9]+}}, %r{{[0-9]+}}};
  ptx.st.vec u32 %l offset 8, %i, %i : !ptx.ptr<local>, i32, i32
  // CHECK: ptx.st.vec b32 %c, %i, %i : !ptx.ptr<shared::cluster>, i32, i32
  // PTX: st.shared::cluster.v2.b32 [%r{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
  ptx.st.vec b32 %c, %i, %i : !ptx.ptr<shared::cluster>, i32, i32
  func.return
}

// 256-bit stores to global memory: sm_100 and PTX ISA 8.8.
// CHECK-LABEL: func.func @st_vec_256
// PTX-LABEL: .visible .entry st_vec_256(
// SM90A: st_vec.mlir:[[# @LINE + 4]]:3: error: 'ptx.st.vec' 'st.global.v8.f32' needs sm_100 and PTX ISA 8.8, but the target is sm_90a
func.func @st_vec_256(%g: !ptx.ptr<global>, %x: f32, %l: i64) {
  // CHECK: ptx.st.vec f32 %g, %x, %x, %x, %x, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32, f32, f32, f32, f32
  // PTX: st.global.v8.f32 [%rd{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
  ptx.st.vec f32 %g, %x, %x, %x, %x, %x, %x, %x, %x : !ptx.ptr<global>, f32, f32, f32, f32, f32, f32, f32, f32
  // CHECK: ptx.st.vec b64 %g, %l, %l, %l, %l : !ptx.ptr<global>, i64, i64, i64, i64
  // PTX: st.global.v4.b64 [%rd{{[0-9]+}}], {%rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}};
  ptx.st.vec b64 %g, %l, %l, %l, %l : !ptx.ptr<global>, i64, i64, i64, i64
  func.return
}
