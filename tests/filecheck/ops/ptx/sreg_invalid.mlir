// Every verifier and parse rule of ptx.mov.sreg, rejected with its message: the result type
// of each kind of register (i32, or i1 for is_explicit_cluster), unknown register names in
// the custom and the generic syntax, a register spelled with '%', a missing or mistyped 'reg'.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: sreg_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.mov.sreg' result 'd' must be i32 for '%tid.x', got i1
func.func @tid_i1() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%tid.x', got i1
  %t = ptx.mov.sreg tid.x : i1
  func.return
}

// -----

func.func @laneid_i64() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%laneid', got i64
  %t = ptx.mov.sreg laneid : i64
  func.return
}

// -----

func.func @nctaid_index() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%nctaid.z', got index
  %t = ptx.mov.sreg nctaid.z : index
  func.return
}

// -----

func.func @cluster_ctarank_f32() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%cluster_ctarank', got f32
  %t = ptx.mov.sreg cluster_ctarank : f32
  func.return
}

// -----

// The one predicate register.
func.func @explicit_cluster_i32() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i1 for '%is_explicit_cluster', got i32
  %t = ptx.mov.sreg is_explicit_cluster : i32
  func.return
}

// -----

func.func @generic_wrong_result() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%warpid', got i16
  %t = "ptx.mov.sreg"() <{reg = #ptx<sreg warpid>}> : () -> i16
  func.return
}

// -----

// STDERR: sreg_invalid.mlir:[[# @LINE + 3]]:21: error: 'reg' tid.w is not a special register (valid: tid.x, tid.y, tid.z, ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z, nctaid.x, nctaid.y, nctaid.z, laneid, warpid, cluster_ctarank, cluster_nctarank, cluster_ctaid.x, cluster_ctaid.y, cluster_ctaid.z, cluster_nctaid.x, cluster_nctaid.y, cluster_nctaid.z, clusterid.x, clusterid.y, clusterid.z, nclusterid.x, nclusterid.y, nclusterid.z, is_explicit_cluster)
func.func @unknown_register() {
  // CHECK: sreg_invalid.mlir:[[# @LINE + 1]]:21: error: 'reg' tid.w is not a special register (valid: tid.x, tid.y, tid.z, ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z, nctaid.x, nctaid.y, nctaid.z, laneid, warpid, cluster_ctarank, cluster_nctarank, cluster_ctaid.x, cluster_ctaid.y, cluster_ctaid.z, cluster_nctaid.x, cluster_nctaid.y, cluster_nctaid.z, clusterid.x, clusterid.y, clusterid.z, nclusterid.x, nclusterid.y, nclusterid.z, is_explicit_cluster)
  %t = ptx.mov.sreg tid.w : i32
  func.return
}

// -----

// A register this dialect does not read (PTX has %smid, but the lowering never needs it).
func.func @unsupported_register() {
  // CHECK: error: 'reg' smid is not a special register (valid: tid.x,
  %t = ptx.mov.sreg smid : i32
  func.return
}

// -----

func.func @generic_unknown_register() {
  // CHECK: sreg_invalid.mlir:[[# @LINE + 1]]:43: error: 'reg' ctaid.w is not a special register (valid: tid.x,
  %t = "ptx.mov.sreg"() <{reg = #ptx<sreg ctaid.w>}> : () -> i32
  func.return
}

// -----

// Registers are spelled as in PTX without the '%' ('%laneid' would be an SSA value).
func.func @percent_spelling() {
  // CHECK: sreg_invalid.mlir:[[# @LINE + 1]]:21: error: expected a special register name, spelled without '%' (valid: tid.x, tid.y, tid.z, ntid.x, ntid.y, ntid.z, ctaid.x, ctaid.y, ctaid.z, nctaid.x, nctaid.y, nctaid.z, laneid, warpid, cluster_ctarank, cluster_nctarank, cluster_ctaid.x, cluster_ctaid.y, cluster_ctaid.z, cluster_nctaid.x, cluster_nctaid.y, cluster_nctaid.z, clusterid.x, clusterid.y, clusterid.z, nclusterid.x, nclusterid.y, nclusterid.z, is_explicit_cluster)
  %t = ptx.mov.sreg %laneid : i32
  func.return
}

// -----

func.func @missing_register() {
  // CHECK: sreg_invalid.mlir:[[# @LINE + 1]]:21: error: expected a special register name, spelled without '%' (valid: tid.x,
  %t = ptx.mov.sreg : i32
  func.return
}

// -----

func.func @generic_missing_reg() {
  // CHECK: error: 'ptx.mov.sreg' property 'reg' expected in operation 'ptx.mov.sreg'
  %t = "ptx.mov.sreg"() : () -> i32
  func.return
}

// -----

func.func @generic_reg_of_another_kind() {
  // CHECK: error: 'ptx.mov.sreg' #ptx<redux_op add> should be of base attribute ptx.sreg
  %t = "ptx.mov.sreg"() <{reg = #ptx<redux_op add>}> : () -> i32
  func.return
}
