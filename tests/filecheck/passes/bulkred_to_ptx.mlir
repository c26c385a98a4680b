// bulkred-to-ptx: lower-tile-reductions, legalize-for-target, lower-to-ptx and
// check-target with one target, on the TIRx card's demonstration program.
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'bulkred-to-ptx{target=sm_100a explain=true}' | filecheck %s --check-prefix=SM100
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'bulkred-to-ptx{target=sm_90a}' | filecheck %s --check-prefix=SM90
// RUN: not bulkred-opt %s -p 'bulkred-to-ptx{target=sm_100a}' 2>&1 | filecheck %s --check-prefix=ERR

// SM100:      // dispatch of 'bulkred.reduce' at {{.*}}seed_sum32.mlir:11:5 on sm_100a
// SM100:      // chosen: sm100_packed
// SM100-LABEL: func.func @test_func
// SM100-NOT:      {{bulkred\.(reduce|copy)|memref\.|scf\.}}
// SM100-COUNT-15: ptx.add.f32x2 rn ftz
// SM100-NOT:      ptx.add.f32x2
// SM100-NOT:      {{bulkred\.(reduce|copy)|memref\.|scf\.}}

// SM90-LABEL: func.func @test_func
// SM90-NOT:   {{ptx\.add\.f32x2|ptx\.max3|bulkred\.(reduce|copy)|memref\.|scf\.}}
// SM90:       ptx.add rn f32
// SM90-NOT:   {{ptx\.add\.f32x2|ptx\.max3|bulkred\.(reduce|copy)|memref\.|scf\.}}

// ERR: bulkred_to_ptx.mlir:[[# @LINE + 3]]:5: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// ERR: warp_shuffle 30 local_scope FAIL src local, dst local src global, dst global
func.func @warp_global(%a: memref<256xf32, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>) {
    bulkred.reduce sum warp %a, %b : memref<256xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
    func.return
}
