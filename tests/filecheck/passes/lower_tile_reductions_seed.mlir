// The TIRx card's demonstration program (examples/seed_sum32.mlir): a 32-element f32
// sum by one thread lowers to sm100_packed on sm_100a and to local on sm_90a.
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_100a explain=true}' | filecheck %s --check-prefix=SM100
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=SM90
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'lower-tile-reductions{explain=true}' | filecheck %s --check-prefix=SM90

// SM100:      // dispatch of 'bulkred.reduce' at {{.*}}seed_sum32.mlir:11:5 on sm_100a
// SM100-NEXT: //   variant priority predicate verdict expected actual
// SM100-NEXT: //   sm100_packed 20 exec_scope ok thread thread
// SM100-NEXT: //   sm100_packed 20 local_scope ok src local, dst local src local, dst local
// SM100-NEXT: //   sm100_packed 20 dst_len ok 1 1
// SM100-NEXT: //   sm100_packed 20 src_ndim ok 1 1
// SM100-NEXT: //   sm100_packed 20 dtype ok float32 float32
// SM100-NEXT: //   sm100_packed 20 kind ok sum, max, min sum
// SM100-NEXT: //   sm100_packed 20 sm_version ok >= 100 100 (sm_100a)
// SM100-NEXT: //   sm100_packed 20 reduction_len ok >= 8 32
// SM100-NEXT: //   local 10 exec_scope ok thread thread
// SM100-NEXT: //   local 10 local_scope ok src local, dst local src local, dst local
// SM100-NEXT: //   local 10 dtype ok {{.*}}float32{{.*}} float32
// SM100-NEXT: //   sm100_packed priority 20: chosen
// SM100-NEXT: //   local priority 10: applies, lower priority
// SM100-NEXT: {{.*}}not for scope thread: {{.*}}
// SM100-NEXT: // chosen: sm100_packed
// SM100-LABEL: func.func @test_func
// The copy into registers: one loop of loads and stores.
// SM100:         scf.for
// SM100-NEXT:      memref.load %A[
// SM100-NEXT:      memref.store {{.*}}, %A_local[
// Then TIRx's order, unrolled (3 further chunks, no loop): the first chunk's 8 loads,
// and per further chunk 8 loads and 4 packed adds; then the 3 tree steps and the last
// scalar add.
// SM100-NOT:       scf.for
// SM100-COUNT-8:   memref.load %A_local[
// SM100-NOT:       ptx.add.f32x2
// SM100-COUNT-8:   memref.load %A_local[
// SM100-COUNT-4:   ptx.add.f32x2 rn ftz
// SM100-COUNT-8:   memref.load %A_local[
// SM100-COUNT-4:   ptx.add.f32x2 rn ftz
// SM100-COUNT-8:   memref.load %A_local[
// SM100-COUNT-7:   ptx.add.f32x2 rn ftz
// SM100-NOT:       memref.load %A_local[
// SM100-NOT:       ptx.add.f32x2
// SM100:           %[[R:.*]] = ptx.add rn f32
// SM100-NEXT:      memref.store %[[R]], %B_local[
// SM100-NOT:       bulkred.{{reduce|copy}}
// SM100:         func.return

// SM90:      // dispatch of 'bulkred.reduce' at {{.*}}seed_sum32.mlir:11:5 on sm_90a
// SM90:      //   sm100_packed 20 sm_version FAIL >= 100 90 (sm_90a)
// SM90:      //   sm100_packed priority 20: rejected: sm_version
// SM90-NEXT: //   local priority 10: chosen
// SM90-NEXT: {{.*}}not for scope thread: {{.*}}
// SM90-NEXT: // chosen: local
// SM90-LABEL: func.func @test_func
// SM90:         memref.store {{.*}}, %A_local[
// SM90-NEXT:    }
// SM90-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// SM90-NEXT:    %[[FIRST:.*]] = memref.load %A_local[%[[C0]]]
// SM90-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// SM90-NEXT:    %[[C32:.*]] = arith.constant 32 : index
// SM90-NEXT:    %[[SUM:.*]] = scf.for %[[I:.*]] = %[[C1]] to %[[C32]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[FIRST]]) -> (f32) {
// SM90-NEXT:      %[[X:.*]] = memref.load %A_local[%[[I]]]
// SM90-NEXT:      %[[NEXT:.*]] = ptx.add rn f32 %[[ACC]], %[[X]] : f32
// SM90-NEXT:      scf.yield %[[NEXT]] : f32
// SM90-NEXT:    }
// SM90-NEXT:    memref.store %[[SUM]], %B_local[%[[C0]]]
// SM90-NOT:     ptx.add.f32x2
// SM90-NOT:     bulkred.{{reduce|copy}}
// SM90:         func.return
