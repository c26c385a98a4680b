// Thread t holds x[t]; every thread gets the sum over its warp (redux.sync).
//   bulkred-opt examples/warp_sum.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/warp_sum.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @warp_sum(%x: memref<64xi32, #bulkred.scope<global>>, %out: memref<64xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [64], cluster = [1]>} {
  %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c64 = arith.constant 64 : index
  %base = arith.muli %b, %c64 : index
  %i = arith.addi %base, %t : index
  %mine = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %xv = memref.subview %x[%i] [1] [1] : memref<64xi32, #bulkred.scope<global>> to memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %ov = memref.subview %out[%i] [1] [1] : memref<64xi32, #bulkred.scope<global>> to memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  bulkred.copy %xv, %mine : memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce sum warp %mine, %r : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %r, %ov : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, strided<[1], offset: ?>, #bulkred.scope<global>>
  func.return
}
