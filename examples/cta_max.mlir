// Thread t holds x[t]; every thread gets the max over its CTA of 256 threads.
//   bulkred-opt examples/cta_max.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/cta_max.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @cta_max(%x: memref<512xf32, #bulkred.scope<global>>, %out: memref<512xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [256], cluster = [1]>} {
  %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c256 = arith.constant 256 : index
  %base = arith.muli %b, %c256 : index
  %i = arith.addi %base, %t : index
  %mine = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  %xv = memref.subview %x[%i] [1] [1] : memref<512xf32, #bulkred.scope<global>> to memref<1xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %ov = memref.subview %out[%i] [1] [1] : memref<512xf32, #bulkred.scope<global>> to memref<1xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  bulkred.copy %xv, %mine : memref<1xf32, strided<[1], offset: ?>, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce max cta %mine, %r : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.copy %r, %ov : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  func.return
}
