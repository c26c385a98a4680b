// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -p 'check-target{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s -p 'check-target{target=sm_80}' 2>&1 | filecheck %s --check-prefix=SM80

// Verifier and parse errors of ptx.mov.sreg are in sreg_invalid.mlir; the sm_80 target error is below.

// CHECK-LABEL: func.func @ids
// GENERIC-LABEL: sym_name = "ids"
func.func @ids() {
  // CHECK: %{{.*}} = ptx.mov.sreg tid.x : i32
  // GENERIC: %{{.*}} = "ptx.mov.sreg"() <{reg = #ptx<sreg tid.x>}> : () -> i32
  %0 = ptx.mov.sreg tid.x : i32
  // CHECK: ptx.mov.sreg tid.y : i32
  %1 = ptx.mov.sreg tid.y : i32
  // CHECK: ptx.mov.sreg tid.z : i32
  %2 = ptx.mov.sreg tid.z : i32
  // CHECK: ptx.mov.sreg ntid.x : i32
  %3 = ptx.mov.sreg ntid.x : i32
  // CHECK: ptx.mov.sreg ntid.y : i32
  %4 = ptx.mov.sreg ntid.y : i32
  // CHECK: ptx.mov.sreg ntid.z : i32
  %5 = ptx.mov.sreg ntid.z : i32
  // CHECK: ptx.mov.sreg ctaid.x : i32
  %6 = ptx.mov.sreg ctaid.x : i32
  // CHECK: ptx.mov.sreg ctaid.y : i32
  %7 = ptx.mov.sreg ctaid.y : i32
  // CHECK: ptx.mov.sreg ctaid.z : i32
  %8 = ptx.mov.sreg ctaid.z : i32
  // CHECK: ptx.mov.sreg nctaid.x : i32
  %9 = ptx.mov.sreg nctaid.x : i32
  // CHECK: ptx.mov.sreg nctaid.y : i32
  %10 = ptx.mov.sreg nctaid.y : i32
  // CHECK: ptx.mov.sreg nctaid.z : i32
  %11 = ptx.mov.sreg nctaid.z : i32
  // CHECK: ptx.mov.sreg laneid : i32
  %12 = ptx.mov.sreg laneid : i32
  // CHECK: ptx.mov.sreg warpid : i32
  %13 = ptx.mov.sreg warpid : i32
  func.return
}

// The cluster registers need sm_90 and PTX ISA 7.8.
// CHECK-LABEL: func.func @cluster_ids
// GENERIC-LABEL: sym_name = "cluster_ids"
func.func @cluster_ids() {
  // SM80: sreg.mlir:[[# @LINE + 2]]:3: error: 'ptx.mov.sreg' 'mov.u32' needs sm_90 and PTX ISA 7.8, but the target is sm_80
  // CHECK: %{{.*}} = ptx.mov.sreg cluster_ctarank : i32
  %0 = ptx.mov.sreg cluster_ctarank : i32
  // CHECK: ptx.mov.sreg cluster_nctarank : i32
  %1 = ptx.mov.sreg cluster_nctarank : i32
  // CHECK: ptx.mov.sreg cluster_ctaid.x : i32
  %2 = ptx.mov.sreg cluster_ctaid.x : i32
  // CHECK: ptx.mov.sreg cluster_ctaid.y : i32
  %3 = ptx.mov.sreg cluster_ctaid.y : i32
  // CHECK: ptx.mov.sreg cluster_ctaid.z : i32
  %4 = ptx.mov.sreg cluster_ctaid.z : i32
  // CHECK: ptx.mov.sreg cluster_nctaid.x : i32
  %5 = ptx.mov.sreg cluster_nctaid.x : i32
  // CHECK: ptx.mov.sreg cluster_nctaid.y : i32
  %6 = ptx.mov.sreg cluster_nctaid.y : i32
  // CHECK: ptx.mov.sreg cluster_nctaid.z : i32
  %7 = ptx.mov.sreg cluster_nctaid.z : i32
  // CHECK: ptx.mov.sreg clusterid.x : i32
  %8 = ptx.mov.sreg clusterid.x : i32
  // CHECK: ptx.mov.sreg clusterid.y : i32
  %9 = ptx.mov.sreg clusterid.y : i32
  // CHECK: ptx.mov.sreg clusterid.z : i32
  %10 = ptx.mov.sreg clusterid.z : i32
  // CHECK: ptx.mov.sreg nclusterid.x : i32
  %11 = ptx.mov.sreg nclusterid.x : i32
  // CHECK: ptx.mov.sreg nclusterid.y : i32
  %12 = ptx.mov.sreg nclusterid.y : i32
  // CHECK: ptx.mov.sreg nclusterid.z : i32
  %13 = ptx.mov.sreg nclusterid.z : i32
  // CHECK: %{{.*}} = ptx.mov.sreg is_explicit_cluster : i1
  // GENERIC: %{{.*}} = "ptx.mov.sreg"() <{reg = #ptx<sreg is_explicit_cluster>}> : () -> i1
  %14 = ptx.mov.sreg is_explicit_cluster : i1
  func.return
}
