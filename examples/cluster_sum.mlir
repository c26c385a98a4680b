// Thread t holds x[t]; every thread gets the sum over its 2-CTA cluster (red.async into CTA 0).
//   bulkred-opt examples/cluster_sum.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/cluster_sum.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @cluster_sum(%x: memref<512xi32, #bulkred.scope<global>>, %out: memref<512xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [128], cluster = [2]>} {
  %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c128 = arith.constant 128 : index
  %base = arith.muli %b, %c128 : index
  %i = arith.addi %base, %t : index
  %mine = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %xv = memref.subview %x[%i] [1] [1] : memref<512xi32, #bulkred.scope<global>> to memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %ov = memref.subview %out[%i] [1] [1] : memref<512xi32, #bulkred.scope<global>> to memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  bulkred.copy %xv, %mine : memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce sum cluster %mine, %r : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %r, %ov : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  func.return
}
