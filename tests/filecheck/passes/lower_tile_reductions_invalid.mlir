// Reductions that no variant lowers: the error names the op's location and carries
// the whole dispatch table; forced variants that do not apply or do not exist.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-reductions{target=sm_100a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_100a}' 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// A warp-scope reduction of i16: the warp variants decline its type; the thread-scope
// variants are named on one line.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 10]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 9]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK-NEXT: dispatch of 'bulkred.reduce' at {{.*}}lower_tile_reductions_invalid.mlir:[[# @LINE + 8]]:3 on sm_100a
// CHECK:        warp_redux_f32 33 dtype FAIL float32 int16
// CHECK:        warp_redux 32 dtype FAIL int32 int16
// CHECK:        warp_shuffle 30 dtype FAIL int32, int64, float16, bfloat16, float32, float64 int16
// CHECK:        warp_shuffle priority 30: rejected: dtype
// CHECK-NEXT:   not for scope warp: {{.*}}sm100_packed (20), local (10)
// CHECK-NEXT: chosen: none
func.func @warp(%a: memref<1xi16, #bulkred.scope<local>>, %b: memref<1xi16, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  bulkred.reduce sum warp %a, %b : memref<1xi16, #bulkred.scope<local>>, memref<1xi16, #bulkred.scope<local>>
  func.return
}

// -----

// A shared-memory source: local_scope declines both variants.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 7]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:        sm100_packed 20 local_scope FAIL src local, dst local src shared, dst local
// CHECK:        local 10 local_scope FAIL src local, dst local src shared, dst local
// CHECK:        sm100_packed priority 20: rejected: local_scope
// CHECK-NEXT:   local priority 10: rejected: local_scope
func.func @shared_src(%a: memref<32xf32, #bulkred.scope<shared>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// A cluster-scope reduction of global buffers: every reason is collected.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 22]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 21]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK-NEXT: dispatch of 'bulkred.reduce' at {{.*}}lower_tile_reductions_invalid.mlir:[[# @LINE + 20]]:3 on sm_100a
// CHECK-NEXT:   variant priority predicate verdict expected actual
// CHECK-NEXT:   cluster_red_async 51 exec_scope ok cluster cluster
// CHECK-NEXT:   cluster_red_async 51 local_scope FAIL src local, dst local src global, dst global
// CHECK-NEXT:   cluster_red_async 51 dst_len FAIL 1 dst of 4 elements
// CHECK-NEXT:   cluster_red_async 51 dtype ok int32 int32
// CHECK-NEXT:   cluster_red_async 51 block FAIL a multiple of 32 threads no bulkred.launch
// CHECK-NEXT:   cluster_red_async 51 cluster FAIL >= 2 CTAs no bulkred.launch
// CHECK-NEXT:   cluster_red_async 51 kind ok sum, max, min, and, or, xor (red.async has no mul) sum
// CHECK-NEXT:   cluster_dsmem 50 exec_scope ok cluster cluster
// CHECK-NEXT:   cluster_dsmem 50 local_scope FAIL src local, dst local src global, dst global
// CHECK-NEXT:   cluster_dsmem 50 dst_len FAIL 1 dst of 4 elements
// CHECK-NEXT:   cluster_dsmem 50 dtype ok {{.*}} int32
// CHECK-NEXT:   cluster_dsmem 50 block FAIL a multiple of 32 threads no bulkred.launch
// CHECK-NEXT:   cluster_dsmem 50 cluster FAIL >= 2 CTAs no bulkred.launch
// CHECK-NEXT:   cluster_red_async priority 51: rejected: local_scope, dst_len, block, cluster
// CHECK-NEXT:   cluster_dsmem priority 50: rejected: local_scope, dst_len, block, cluster
// CHECK-NEXT:   not for scope cluster: {{.*}}
// CHECK-NEXT: chosen: none
func.func @cluster(%a: memref<4x64xi32, #bulkred.scope<global>>, %b: memref<4xi32, #bulkred.scope<global>>) {
  bulkred.reduce sum cluster %a, %b : memref<4x64xi32, #bulkred.scope<global>>, memref<4xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Forcing sm100_packed onto an f16 vector names the failing predicate.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 7]]:3: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dtype (expected float32, got float16)
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dtype (expected float32, got float16)
// CHECK:        sm100_packed priority 20: rejected: dtype
// CHECK:      forced by 'variant': sm100_packed
// CHECK-NEXT:   not for scope thread: {{.*}}
// CHECK-NEXT: chosen: none
func.func @forced_fails(%a: memref<32xf16, #bulkred.scope<local>>, %b: memref<1xf16, #bulkred.scope<local>>) {
  bulkred.reduce sum thread variant "sm100_packed" %a, %b : memref<32xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  func.return
}

// -----

// Forcing sm100_packed below length 8 and on a 2-D source: both reasons.
// CHECK: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dst_len (expected 1, got 3); src_ndim (expected 1, got 2); reduction_len (expected >= 8, got 5)
func.func @forced_fails_twice(%a: memref<3x5xf32, #bulkred.scope<local>>, %b: memref<3xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread variant "sm100_packed" %a, %b : memref<3x5xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  func.return
}

// -----

// An unknown variant name lists the known ones.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'variant' 'packed' is not a known variant (known: {{.*}}sm100_packed, local)
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'variant' 'packed' is not a known variant (known: {{.*}}sm100_packed, local)
func.func @forced_unknown(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread variant "packed" %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
