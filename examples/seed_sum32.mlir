// The TIRx reduction card's demonstration program (test_func): one thread of one
// CTA sums a 32-element float32 vector A into B[0].
//
//   bulkred-opt examples/seed_sum32.mlir                      # verify and print
//   bulkred-opt examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_100a explain=true}'
builtin.module {
  func.func @test_func(%A: memref<32xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
    %A_local = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
    %B_local = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
    bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>
    bulkred.reduce sum thread %A_local, %B_local : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
    bulkred.copy %B_local, %B : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
    func.return
  }
}
