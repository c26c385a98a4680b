// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'check-target{target=sm_90a}' | filecheck %s --check-prefix=SM90A
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'check-target{target=sm_100a}' | filecheck %s --check-prefix=SM100A

// The .op x .type table of the relaxed.cluster syntax blocks.

// STDERR: red_async_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.red.async.relaxed.cluster' '.op' inc is not valid with '.type' s32 (valid: min, max, add)
func.func @inc_s32(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' '.op' inc is not valid with '.type' s32 (valid: min, max, add)
  ptx.red.async.relaxed.cluster inc s32 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @and_u32(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' '.op' and is not valid with '.type' u32 (valid: inc, dec, min, max, add)
  ptx.red.async.relaxed.cluster and u32 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @min_u64(%a: !ptx.ptr<shared::cluster>, %c: i64) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' '.op' min is not valid with '.type' u64 (valid: add)
  ptx.red.async.relaxed.cluster min u64 %a, %c, %a : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @max_s64(%a: !ptx.ptr<shared::cluster>, %c: i64) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' '.op' max is not valid with '.type' s64 (valid: add)
  ptx.red.async.relaxed.cluster max s64 %a, %c, %a : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @add_s64_b_i32(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'b' must be i64 for '.type' s64, got i32
  ptx.red.async.relaxed.cluster add s64 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @add_b32(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' '.op' add is not valid with '.type' b32 (valid: and, or, xor)
  ptx.red.async.relaxed.cluster add b32 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

// '.ss' of the relaxed form: .shared::cluster or none (generic).

func.func @relaxed_global(%g: !ptx.ptr<global>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'a' must be !ptx.ptr<shared::cluster> ('.ss' shared::cluster) or !ptx.ptr<generic> (no '.ss') with '.sem' relaxed, got !ptx.ptr<global>
  ptx.red.async.relaxed.cluster add u32 %g, %b, %g : !ptx.ptr<global>, i32, !ptx.ptr<global>
  func.return
}

// -----

func.func @relaxed_shared_cta(%s: !ptx.ptr<shared::cta>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'a' must be !ptx.ptr<shared::cluster> ('.ss' shared::cluster) or !ptx.ptr<generic> (no '.ss') with '.sem' relaxed, got !ptx.ptr<shared::cta>
  ptx.red.async.relaxed.cluster add u32 %s, %b, %s : !ptx.ptr<shared::cta>, i32, !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @relaxed_mbar_space(%a: !ptx.ptr<shared::cluster>, %m: !ptx.ptr<generic>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'mbar' must be !ptx.ptr<shared::cluster> like operand 'a' (one '.ss' names both), got !ptx.ptr<generic>
  ptx.red.async.relaxed.cluster add u32 %a, %b, %m : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<generic>
  func.return
}

// -----

// Operand 'b' by the width of '.type'.

func.func @relaxed_u64_on_i32(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'b' must be i64 for '.type' u64, got i32
  ptx.red.async.relaxed.cluster add u64 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @relaxed_u32_on_i64(%a: !ptx.ptr<shared::cluster>, %c: i64) {
  // CHECK: error: 'ptx.red.async.relaxed.cluster' operand 'b' must be i32 for '.type' u32, got i64
  ptx.red.async.relaxed.cluster min u32 %a, %c, %a : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  func.return
}

// -----

// '.scope' of the release form: ptxas rejects .cluster with .release.

func.func @release_cluster(%g: !ptx.ptr<global>, %b: i32) {
  // CHECK: error: 'ptx.red.async.release' '.scope' cluster is not valid with '.sem' release (valid: gpu, sys)
  ptx.red.async.release cluster u32 %g, %b : !ptx.ptr<global>, i32
  func.return
}

// -----

// "If .mmio is specified, .scope must be .sys".

func.func @mmio_gpu(%g: !ptx.ptr<global>, %b: i32) {
  // CHECK: error: 'ptx.red.async.release' '.mmio' requires '.scope' sys, got '.scope' gpu
  ptx.red.async.release mmio gpu u32 %g, %b : !ptx.ptr<global>, i32
  func.return
}

// -----

// '.ss' of the release form: .global or none (generic).

func.func @release_shared(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // CHECK: error: 'ptx.red.async.release' operand 'a' must be !ptx.ptr<global> ('.ss' global) or !ptx.ptr<generic> (no '.ss') with '.sem' release, got !ptx.ptr<shared::cluster>
  ptx.red.async.release gpu u32 %a, %b : !ptx.ptr<shared::cluster>, i32
  func.return
}

// -----

func.func @release_s64_on_i32(%g: !ptx.ptr<global>, %b: i32) {
  // CHECK: error: 'ptx.red.async.release' operand 'b' must be i64 for '.type' s64, got i32
  ptx.red.async.release gpu s64 %g, %b : !ptx.ptr<global>, i32
  func.return
}

// -----

// Target checks: the release form needs sm_100 and PTX ISA 8.7; the relaxed form sm_90.

// SM100A-LABEL: func.func @release_on_sm90a
func.func @release_on_sm90a(%g: !ptx.ptr<global>, %b: i32) {
  // SM90A: red_async_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.red.async.release' 'red.async.release.gpu.global.add.u32' needs sm_100 and PTX ISA 8.7, but the target is sm_90a
  // CHECK-LABEL: func.func @release_on_sm90a
  // SM100A: ptx.red.async.release gpu u32
  ptx.red.async.release gpu u32 %g, %b : !ptx.ptr<global>, i32
  func.return
}

// -----

// SM100A-LABEL: func.func @mmio_on_sm90a
func.func @mmio_on_sm90a(%p: !ptx.ptr<generic>, %c: i64) {
  // SM90A: error: 'ptx.red.async.release' 'red.async.mmio.release.sys.add.u64' needs sm_100 and PTX ISA 8.7, but the target is sm_90a
  // SM100A: ptx.red.async.release mmio sys u64
  ptx.red.async.release mmio sys u64 %p, %c : !ptx.ptr<generic>, i64
  func.return
}

// -----

// SM90A-LABEL: func.func @relaxed_on_sm90a
// SM100A-LABEL: func.func @relaxed_on_sm90a
func.func @relaxed_on_sm90a(%a: !ptx.ptr<shared::cluster>, %b: i32) {
  // SM90A: ptx.red.async.relaxed.cluster add u32
  // SM100A: ptx.red.async.relaxed.cluster add u32
  ptx.red.async.relaxed.cluster add u32 %a, %b, %a : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

// Alignment, where known at compile time: 'a' to the size of '.type', 'mbar' (an mbarrier
// object, .b64) to 8.
// STDERR: red_async_invalid.mlir:[[# @LINE + 8]]:3: error: 'ptx.red.async.relaxed.cluster' 'a' must be 8-byte aligned, known alignment 4
func.func @relaxed_a_u64_offset_4(%b: i64, %mbar: !ptx.ptr<shared::cluster>, %rank: i32) {
  ptx.alloc shared @acc size 64 align 16
  %acc = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  %c4 = arith.constant 4 : i32
  %p = ptx.add.ptr %acc, %c4 : !ptx.ptr<shared::cta>, i32
  %a = ptx.mapa %p, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.red.async.relaxed.cluster' 'a' must be 8-byte aligned, known alignment 4
  ptx.red.async.relaxed.cluster add u64 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @relaxed_a_u32_offset_2(%b: i32, %mbar: !ptx.ptr<shared::cluster>, %rank: i32) {
  ptx.alloc shared @acc size 64 align 16
  %acc = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  %c2 = arith.constant 2 : i32
  %p = ptx.add.ptr %acc, %c2 : !ptx.ptr<shared::cta>, i32
  %a = ptx.mapa %p, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.red.async.relaxed.cluster' 'a' must be 4-byte aligned, known alignment 2
  ptx.red.async.relaxed.cluster min s32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @relaxed_mbar_align_4(%a: !ptx.ptr<shared::cluster>, %b: i32, %rank: i32) {
  ptx.alloc shared @bar size 8 align 4
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %mbar = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.red.async.relaxed.cluster' 'mbar' must be 8-byte aligned, known alignment 4
  ptx.red.async.relaxed.cluster add u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// -----

// A constant generic address (through ptx.mov) is its own alignment.
func.func @release_a_s64_constant_address(%c: i64) {
  %addr = arith.constant 4100 : i64
  %a = ptx.mov %addr : i64 -> !ptx.ptr<generic>
  // CHECK: error: 'ptx.red.async.release' 'a' must be 8-byte aligned, known alignment 4
  ptx.red.async.release gpu s64 %a, %c : !ptx.ptr<generic>, i64
  func.return
}
