// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'check-target{target=sm_80}' | filecheck %s --check-prefix=SM80

// mbarrier addresses: .shared::cta (and .shared::cluster for arrive.expect_tx).

// STDERR: sync_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.mbarrier.init' operand 'addr' must be !ptx.ptr<shared::cta>, got !ptx.ptr<shared::cluster>
func.func @init_cluster(%m: !ptx.ptr<shared::cluster>, %n: i32) {
  // CHECK: error: 'ptx.mbarrier.init' operand 'addr' must be !ptx.ptr<shared::cta>, got !ptx.ptr<shared::cluster>
  ptx.mbarrier.init %m, %n : !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @arrive_generic(%m: !ptx.ptr<generic>) {
  // CHECK: error: 'ptx.mbarrier.arrive' operand 'addr' must be !ptx.ptr<shared::cta>, got !ptx.ptr<generic>
  %s = ptx.mbarrier.arrive %m : !ptx.ptr<generic>
  func.return
}

// -----

func.func @expect_tx_global(%m: !ptx.ptr<global>, %n: i32) {
  // CHECK: error: 'ptx.mbarrier.arrive.expect_tx' operand 'addr' must be !ptx.ptr<shared::cta> or !ptx.ptr<shared::cluster>, got !ptx.ptr<global>
  ptx.mbarrier.arrive.expect_tx %m, %n : !ptx.ptr<global>
  func.return
}

// -----

// ptxas: "Sink '_' is expected as a destination operand ... with '.shared::cluster'".
func.func @expect_tx_cluster_state(%m: !ptx.ptr<shared::cluster>, %n: i32) {
  // CHECK: error: 'ptx.mbarrier.arrive.expect_tx' 'state' must be the sink '_' (no result) with '.shared::cluster', got a result
  %s = ptx.mbarrier.arrive.expect_tx %m, %n : !ptx.ptr<shared::cluster> -> i64
  func.return
}

// -----

func.func @try_wait_cluster(%m: !ptx.ptr<shared::cluster>, %p: i32) {
  // CHECK: error: 'ptx.mbarrier.try_wait.parity' operand 'addr' must be !ptx.ptr<shared::cta>, got !ptx.ptr<shared::cluster>
  %d = ptx.mbarrier.try_wait.parity %m, %p : !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @inval_cluster(%m: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.mbarrier.inval' operand 'addr' must be !ptx.ptr<shared::cta>, got !ptx.ptr<shared::cluster>
  ptx.mbarrier.inval %m : !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @inval_i32(%m: i32) {
  // CHECK: error: 'ptx.mbarrier.inval' operand 'addr' must be !ptx.ptr<shared::cta>, got i32
  ptx.mbarrier.inval %m : i32
  func.return
}

// -----

func.func @fence_proxy_local() {
  // CHECK: error: 'ptx.fence.proxy.async' '.space' local is not valid for 'fence.proxy.async' (valid: shared::cta, shared::cluster, global)
  ptx.fence.proxy.async space local
  func.return
}

// -----

func.func @wait_group_negative() {
  // CHECK: error: 'ptx.cp.async.bulk.wait_group' 'N' must not be negative, got -1
  ptx.cp.async.bulk.wait_group read -1
  func.return
}

// -----

func.func @bar_sync_16() {
  // CHECK: error: 'ptx.bar.sync' 'id' must be in 0..15, got 16
  ptx.bar.sync 16
  func.return
}

// -----

func.func @mapa_global(%a: !ptx.ptr<global>, %r: i32) {
  // CHECK: error: 'ptx.mapa' operand 'a' must be !ptx.ptr<shared::cta>, got !ptx.ptr<global>
  %d = ptx.mapa %a, %r : !ptx.ptr<global>
  func.return
}

// -----

// Special registers: i32, except the predicate is_explicit_cluster.

func.func @sreg_tid_i1() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i32 for '%tid.x', got i1
  %t = ptx.mov.sreg tid.x : i1
  func.return
}

// -----

func.func @sreg_explicit_cluster_i32() {
  // CHECK: error: 'ptx.mov.sreg' result 'd' must be i1 for '%is_explicit_cluster', got i32
  %t = ptx.mov.sreg is_explicit_cluster : i32
  func.return
}

// -----

// Target checks: sm_80 has mbarrier.init / mbarrier.arrive / mbarrier.inval and bar.sync,
// not the sm_90 forms.

// SM80-LABEL: func.func @on_sm80
func.func @on_sm80(%m: !ptx.ptr<shared::cta>, %n: i32) {
  // CHECK-LABEL: func.func @on_sm80
  // SM80: ptx.mbarrier.init
  ptx.mbarrier.init %m, %n : !ptx.ptr<shared::cta>
  // SM80: ptx.mbarrier.arrive
  %s = ptx.mbarrier.arrive %m : !ptx.ptr<shared::cta>
  // SM80: ptx.mbarrier.inval
  ptx.mbarrier.inval %m : !ptx.ptr<shared::cta>
  // SM80: ptx.bar.sync 0
  ptx.bar.sync 0
  // SM80: ptx.mov.sreg tid.x
  %t = ptx.mov.sreg tid.x : i32
  func.return
}

// -----

func.func @expect_tx_on_sm80(%m: !ptx.ptr<shared::cta>, %n: i32) {
  // SM80: sync_invalid.mlir:[[# @LINE + 1]]:3: error: 'ptx.mbarrier.arrive.expect_tx' 'mbarrier.arrive.expect_tx.shared::cta.b64' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.mbarrier.arrive.expect_tx %m, %n : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @try_wait_on_sm80(%m: !ptx.ptr<shared::cta>, %n: i32) {
  // SM80: error: 'ptx.mbarrier.try_wait.parity' 'mbarrier.try_wait.parity.shared::cta.b64' needs sm_90 and PTX ISA 7.8, but the target is sm_80
  %d = ptx.mbarrier.try_wait.parity %m, %n : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @fences_on_sm80() {
  // SM80: error: 'ptx.fence.mbarrier_init.release.cluster' 'fence.mbarrier_init.release.cluster' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.fence.mbarrier_init.release.cluster
  func.return
}

// -----

func.func @proxy_fence_on_sm80() {
  // SM80: error: 'ptx.fence.proxy.async' 'fence.proxy.async.shared::cta' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.fence.proxy.async space "shared::cta"
  func.return
}

// -----

func.func @bulk_groups_on_sm80() {
  // SM80: error: 'ptx.cp.async.bulk.commit_group' 'cp.async.bulk.commit_group' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.cp.async.bulk.commit_group
  func.return
}

// -----

func.func @wait_group_on_sm80() {
  // SM80: error: 'ptx.cp.async.bulk.wait_group' 'cp.async.bulk.wait_group.read' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.cp.async.bulk.wait_group read 0
  func.return
}

// -----

// An explicit .sem needs PTX ISA 8.0, the bare form 7.8.
func.func @cluster_arrive_on_sm80() {
  // SM80: error: 'ptx.barrier.cluster.arrive' 'barrier.cluster.arrive.release' needs sm_90 and PTX ISA 8.0, but the target is sm_80
  ptx.barrier.cluster.arrive sem release
  func.return
}

// -----

func.func @cluster_wait_on_sm80() {
  // SM80: error: 'ptx.barrier.cluster.wait' 'barrier.cluster.wait' needs sm_90 and PTX ISA 7.8, but the target is sm_80
  ptx.barrier.cluster.wait
  func.return
}

// -----

func.func @mapa_on_sm80(%a: !ptx.ptr<shared::cta>, %r: i32) {
  // SM80: error: 'ptx.mapa' 'mapa.shared::cluster.u32' needs sm_90 and PTX ISA 7.8, but the target is sm_80
  %d = ptx.mapa %a, %r : !ptx.ptr<shared::cta>
  func.return
}

// -----

// An mbarrier object is 8-byte aligned (PTX ISA 9.7.13.15.1).
func.func @mbarrier_init_misaligned(%n: i32) {
  ptx.alloc shared @bars size 64 align 4
  %b = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.mbarrier.init' 'addr' must be 8-byte aligned, known alignment 4
  ptx.mbarrier.init %b, %n : !ptx.ptr<shared::cta>
  func.return
}

// -----

// An mbarrier object is 8 bytes: a 4-byte array cannot hold one.
func.func @mbarrier_init_array_too_small(%n: i32) {
  ptx.alloc shared @bar size 4 align 8
  %b = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.mbarrier.init' 'addr' (an 8-byte mbarrier object) must lie inside @bar (4 bytes), got bytes [0, 8)
  ptx.mbarrier.init %b, %n : !ptx.ptr<shared::cta>
  func.return
}

// -----

// Every mbarrier op checks it: the second of two objects in a 12-byte array is cut short.
func.func @mbarrier_ops_past_array(%n: i32) {
  ptx.alloc shared @bars size 12 align 8
  %b = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b1 = ptx.add.ptr %b, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.mbarrier.arrive' 'addr' (an 8-byte mbarrier object) must lie inside @bars (12 bytes), got bytes [8, 16)
  %s = ptx.mbarrier.arrive %b1 : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @mbarrier_expect_tx_remote_past_array(%n: i32, %rank: i32) {
  ptx.alloc shared @bars size 12 align 8
  %b = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b1 = ptx.add.ptr %b, %c8 : !ptx.ptr<shared::cta>, i32
  %r = ptx.mapa %b1, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.mbarrier.arrive.expect_tx' 'addr' (an 8-byte mbarrier object) must lie inside @bars (12 bytes), got bytes [8, 16)
  ptx.mbarrier.arrive.expect_tx %r, %n : !ptx.ptr<shared::cluster>
  func.return
}

// -----

func.func @mbarrier_try_wait_past_array(%n: i32) {
  ptx.alloc shared @bars size 12 align 8
  %b = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b1 = ptx.add.ptr %b, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.mbarrier.try_wait.parity' 'addr' (an 8-byte mbarrier object) must lie inside @bars (12 bytes), got bytes [8, 16)
  %done = ptx.mbarrier.try_wait.parity %b1, %n : !ptx.ptr<shared::cta>
  func.return
}

// -----

func.func @mbarrier_inval_past_array() {
  ptx.alloc shared @bars size 12 align 8
  %b = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b1 = ptx.add.ptr %b, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.mbarrier.inval' 'addr' (an 8-byte mbarrier object) must lie inside @bars (12 bytes), got bytes [8, 16)
  ptx.mbarrier.inval %b1 : !ptx.ptr<shared::cta>
  func.return
}
