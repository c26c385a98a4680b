// The seed demo (examples/seed_sum32.mlir, the TIRx card's test_func) to PTX.
//
// sm_100a: the sm100_packed variant, 4*(32/8 - 1) + 3 = 15 packed adds, .version 8.6.
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=SM100A,ASM100
// SM100A:      .version 8.6
// SM100A-NEXT: .target sm_100a
// SM100A:      .visible .entry test_func(
// SM100A-NEXT:   .param .u64 test_func_param_0,
// SM100A-NEXT:   .param .u64 test_func_param_1
// SM100A-NEXT: )
// SM100A-NEXT: .reqntid 1, 1, 1
// SM100A:        .local .align 16 .b8 __local0_A_local[128];
// SM100A-NEXT:   .local .align 16 .b8 __local1_B_local[4];
// The copy loop A -> A_local, then the loads of A_local at constant offsets (no loop
// below 72 elements): the first chunk (src[0..7]), then each further chunk before its adds.
// SM100A:        ld.global.f32
// SM100A:        st.local.f32
// SM100A:        ld.local.f32 %{{f[0-9]+}}, [%[[AL:rd[0-9]+]]+28];
// SM100A-NOT:    bra
// SM100A-COUNT-15: add.rn.ftz.f32x2 %{{rd[0-9]+}}, %{{rd[0-9]+}}, %{{rd[0-9]+}};
// SM100A-NOT:    add.rn.ftz.f32x2
// SM100A:        add.rn.f32
// SM100A:        st.global.f32
// SM100A:        ret;
//
// sm_90a: the local variant (a scalar loop of add.rn.f32), no sm_100 instruction.
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=SM90A,ASM90
// SM90A:      .version 8.0
// SM90A-NEXT: .target sm_90a
// SM90A-NOT:  f32x2
// SM90A:      add.rn.f32
// SM90A-NOT:  f32x2
// SM90A:      ret;
//
// sm_100a's packed code legalized for sm_90a: each add.f32x2 is two add.rn.ftz.f32.
// RUN: bulkred-opt %S/../../../examples/seed_sum32.mlir -p 'lower-tile-reductions{target=sm_100a},legalize-for-target{target=sm_90a},lower-to-ptx{target=sm_90a}' -t ptx | filecheck %s --check-prefix=LEGAL
// LEGAL:      .version 8.0
// LEGAL-NEXT: .target sm_90a
// LEGAL-NOT:  f32x2
// LEGAL-COUNT-30: add.rn.ftz.f32 %{{f[0-9]+}}, %{{f[0-9]+}}, %{{f[0-9]+}};
// LEGAL-NOT:  f32x2
// LEGAL:      ret;

// -t 'ptx{assemble=true}' (the sm_100a and sm_90a RUN lines above) also assembles through
// nvJitLink (no GPU needed) and says so after the PTX.
// ASM100: // assembled by ptxas (nvJitLink) for sm_100a: {{[0-9]+}} bytes of cubin
// ASM90: // assembled by ptxas (nvJitLink) for sm_90a: {{[0-9]+}} bytes of cubin
