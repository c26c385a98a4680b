// atom, red, fence, membar (ops/ptx/atom.py): custom and generic syntax round trip, the
// PTX line, and the targets.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -t ptx | filecheck %s --check-prefix=PTX
// RUN: bulkred-opt %s -t 'ptx{target=sm_100a}' | filecheck %s --check-prefix=PTX
// RUN: not bulkred-opt %s -p 'check-target{target=sm_80}' 2>&1 | filecheck %s --check-prefix=SM80

// CHECK-LABEL: func.func @atom
// GENERIC-LABEL: sym_name = "atom"
// PTX-LABEL: .visible .entry atom(
func.func @atom(%g: !ptx.ptr<global>, %i: i32, %l: i64, %x: f32, %y: f64) {
  // CHECK: %{{.*}} = ptx.atom add u32 %g, %i : !ptx.ptr<global>, i32
  // GENERIC: "ptx.atom"(%g, %i) <{op = #ptx<atom_op add>, type = #ptx<atom_type u32>}> : (!ptx.ptr<global>, i32) -> i32
  // PTX: atom.global.add.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
  %0 = ptx.atom add u32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom add f32 %g, %x : !ptx.ptr<global>, f32
  // PTX: atom.global.add.f32 %f{{[0-9]+}}, [%rd{{[0-9]+}}], %f{{[0-9]+}};
  %1 = ptx.atom add f32 %g, %x : !ptx.ptr<global>, f32
  // CHECK: ptx.atom add f64 %g, %y : !ptx.ptr<global>, f64
  // PTX: atom.global.add.f64 %fd{{[0-9]+}}, [%rd{{[0-9]+}}], %fd{{[0-9]+}};
  %2 = ptx.atom add f64 %g, %y : !ptx.ptr<global>, f64
  // CHECK: ptx.atom max s64 %g, %l : !ptx.ptr<global>, i64
  // PTX: atom.global.max.s64 %rd{{[0-9]+}}, [%rd{{[0-9]+}}], %rd{{[0-9]+}};
  %3 = ptx.atom max s64 %g, %l : !ptx.ptr<global>, i64
  // CHECK: ptx.atom min u32 %g, %i
  // PTX: atom.global.min.u32
  %4 = ptx.atom min u32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom inc u32 %g, %i
  // PTX: atom.global.inc.u32
  %5 = ptx.atom inc u32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom dec u32 %g, %i
  // PTX: atom.global.dec.u32
  %6 = ptx.atom dec u32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom and b64 %g, %l
  // PTX: atom.global.and.b64
  %7 = ptx.atom and b64 %g, %l : !ptx.ptr<global>, i64
  // CHECK: ptx.atom or b32 %g, %i
  // PTX: atom.global.or.b32
  %8 = ptx.atom or b32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom xor b32 %g, %i
  // PTX: atom.global.xor.b32
  %9 = ptx.atom xor b32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom sem acq_rel scope gpu exch b32 %g, %i : !ptx.ptr<global>, i32
  // GENERIC: "ptx.atom"(%g, %i) <{sem = #ptx<mem_sem acq_rel>, scope = #ptx<mem_scope gpu>, op = #ptx<atom_op exch>, type = #ptx<atom_type b32>}>
  // PTX: atom.acq_rel.gpu.global.exch.b32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
  %10 = ptx.atom sem acq_rel scope gpu exch b32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom sem acquire add u32
  // PTX: atom.acquire.global.add.u32
  %11 = ptx.atom sem acquire add u32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.atom scope sys add u32
  // PTX: atom.sys.global.add.u32
  %12 = ptx.atom scope sys add u32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// CHECK-LABEL: func.func @atom_spaces
// PTX-LABEL: .visible .entry atom_spaces(
// SM80: atom.mlir:[[# @LINE + 8]]:3: error: 'ptx.atom' 'atom.relaxed.cluster.shared::cta.add.u32' needs sm_90 and PTX ISA 7.8, but the target is sm_80
func.func @atom_spaces(%i: i32, %w: i64) {
  ptx.alloc shared @counters size 16 align 16
  %s = ptx.mov.addr @counters : !ptx.ptr<shared::cta>
  %c = ptx.mov %s : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  %p = ptx.mov %w : i64 -> !ptx.ptr<generic>
  // CHECK: ptx.atom sem relaxed scope cluster add u32 %s, %i : !ptx.ptr<shared::cta>, i32
  // PTX: atom.relaxed.cluster.shared::cta.add.u32 %r{{[0-9]+}}, [%r{{[0-9]+}}], %r{{[0-9]+}};
  %0 = ptx.atom sem relaxed scope cluster add u32 %s, %i : !ptx.ptr<shared::cta>, i32
  // CHECK: ptx.atom sem release scope cta add u32 %c, %i : !ptx.ptr<shared::cluster>, i32
  // PTX: atom.release.cta.shared::cluster.add.u32
  %1 = ptx.atom sem release scope cta add u32 %c, %i : !ptx.ptr<shared::cluster>, i32
  // CHECK: ptx.atom add u32 %p, %i : !ptx.ptr<generic>, i32
  // PTX: atom.add.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
  %2 = ptx.atom add u32 %p, %i : !ptx.ptr<generic>, i32
  func.return
}

// CHECK-LABEL: func.func @red
// PTX-LABEL: .visible .entry red(
func.func @red(%g: !ptx.ptr<global>, %i: i32, %x: f32, %x1: f32, %x2: f32, %x3: f32) {
  // CHECK: ptx.red add f32 %g, %x : !ptx.ptr<global>, f32
  // GENERIC: "ptx.red"(%g, %x) <{op = #ptx<red_op add>, type = #ptx<atom_type f32>}> : (!ptx.ptr<global>, f32) -> ()
  // PTX: red.global.add.f32 [%rd{{[0-9]+}}], %f{{[0-9]+}};
  ptx.red add f32 %g, %x : !ptx.ptr<global>, f32
  // CHECK: ptx.red add f32 %g, %x, %x1, %x2, %x3 : !ptx.ptr<global>, f32, f32, f32, f32
  // GENERIC: "ptx.red"(%g, %x, %x1, %x2, %x3) <{op = #ptx<red_op add>, type = #ptx<atom_type f32>}> : (!ptx.ptr<global>, f32, f32, f32, f32) -> ()
  // PTX: red.global.add.v4.f32 [%rd{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
  ptx.red add f32 %g, %x, %x1, %x2, %x3 : !ptx.ptr<global>, f32, f32, f32, f32
  // CHECK: ptx.red sem release scope gpu add f32 %g, %x, %x1 : !ptx.ptr<global>, f32, f32
  // PTX: red.release.gpu.global.add.v2.f32 [%rd{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}};
  ptx.red sem release scope gpu add f32 %g, %x, %x1 : !ptx.ptr<global>, f32, f32
  // CHECK: ptx.red max s32 %g, %i : !ptx.ptr<global>, i32
  // PTX: red.global.max.s32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
  ptx.red max s32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.red sem relaxed scope sys or b32 %g, %i
  // PTX: red.relaxed.sys.global.or.b32
  ptx.red sem relaxed scope sys or b32 %g, %i : !ptx.ptr<global>, i32
  // CHECK: ptx.red inc u32 %g, %i
  // PTX: red.global.inc.u32
  ptx.red inc u32 %g, %i : !ptx.ptr<global>, i32
  func.return
}

// CHECK-LABEL: func.func @red_shared
// PTX-LABEL: .visible .entry red_shared(
func.func @red_shared(%x: f32) {
  ptx.alloc shared @acc size 4 align 4
  %s = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  // CHECK: ptx.red add f32 %s, %x : !ptx.ptr<shared::cta>, f32
  // PTX: red.shared::cta.add.f32 [%r{{[0-9]+}}], %f{{[0-9]+}};
  ptx.red add f32 %s, %x : !ptx.ptr<shared::cta>, f32
  func.return
}

// CHECK-LABEL: func.func @fences
// PTX-LABEL: .visible .entry fences(
func.func @fences() {
  // CHECK: ptx.fence sc gpu
  // GENERIC: "ptx.fence"() <{sem = #ptx<fence_sem sc>, scope = #ptx<mem_scope gpu>}> : () -> ()
  // PTX: fence.sc.gpu;
  ptx.fence sc gpu
  // CHECK: ptx.fence acq_rel cta
  // PTX: fence.acq_rel.cta;
  ptx.fence acq_rel cta
  // CHECK: ptx.fence acq_rel cluster
  // PTX: fence.acq_rel.cluster;
  ptx.fence acq_rel cluster
  // CHECK: ptx.fence sc sys
  // PTX: fence.sc.sys;
  ptx.fence sc sys
  // CHECK: ptx.membar gl
  // GENERIC: "ptx.membar"() <{level = #ptx<membar_level gl>}> : () -> ()
  // PTX: membar.gl;
  ptx.membar gl
  // CHECK: ptx.membar cta
  // PTX: membar.cta;
  ptx.membar cta
  // CHECK: ptx.membar sys
  // PTX: membar.sys;
  ptx.membar sys
  func.return
}

// CHECK-LABEL: func.func @half
// PTX-LABEL: .visible .entry half(
func.func @half(%g: !ptx.ptr<global>, %h: f16, %b: bf16) {
  // CHECK: ptx.atom add noftz f16 %g, %h : !ptx.ptr<global>, f16
  // GENERIC: "ptx.atom"(%g, %h) <{op = #ptx<atom_op add>, noftz, type = #ptx<atom_type f16>}> : (!ptx.ptr<global>, f16) -> f16
  // PTX: atom.global.add.noftz.f16 %h{{[0-9]+}}, [%rd{{[0-9]+}}], %h{{[0-9]+}};
  %0 = ptx.atom add noftz f16 %g, %h : !ptx.ptr<global>, f16
  // CHECK: ptx.atom add noftz bf16 %g, %b : !ptx.ptr<global>, bf16
  // PTX: atom.global.add.noftz.bf16
  %1 = ptx.atom add noftz bf16 %g, %b : !ptx.ptr<global>, bf16
  // CHECK: ptx.red add noftz bf16 %g, %b : !ptx.ptr<global>, bf16
  // PTX: red.global.add.noftz.bf16 [%rd{{[0-9]+}}], %h{{[0-9]+}};
  ptx.red add noftz bf16 %g, %b : !ptx.ptr<global>, bf16
  // CHECK: ptx.red max noftz bf16 %g, %b, %b, %b, %b, %b, %b, %b, %b : !ptx.ptr<global>, bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16
  // PTX: red.global.max.noftz.v8.bf16 [%rd{{[0-9]+}}], {%h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}};
  ptx.red max noftz bf16 %g, %b, %b, %b, %b, %b, %b, %b, %b : !ptx.ptr<global>, bf16, bf16, bf16, bf16, bf16, bf16, bf16, bf16
  // CHECK: ptx.red sem release scope gpu min noftz f16 %g, %h, %h
  // PTX: red.release.gpu.global.min.noftz.v2.f16
  ptx.red sem release scope gpu min noftz f16 %g, %h, %h : !ptx.ptr<global>, f16, f16
  // CHECK: ptx.red add noftz f16 %g, %h, %h, %h, %h
  // PTX: red.global.add.noftz.v4.f16
  ptx.red add noftz f16 %g, %h, %h, %h, %h : !ptx.ptr<global>, f16, f16, f16, f16
  func.return
}
