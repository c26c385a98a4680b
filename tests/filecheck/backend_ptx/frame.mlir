// The PTX module frame: version, target, entry, parameters, registers, loads of the
// parameters, a loop as labels and branches.
// RUN: bulkred-opt %s -p lower-to-ptx -t ptx | filecheck %s
// RUN: bulkred-opt %s -p lower-to-ptx -t 'ptx{target=sm_100a}' | filecheck %s --check-prefix=SM100A
// RUN: bulkred-opt %s -p 'lower-to-ptx{target=sm_100a}' -t ptx | filecheck %s --check-prefix=SM100A

// The lowest version the target accepts (no op here needs more).
// CHECK:      .version 8.0
// CHECK-NEXT: .target sm_90a
// CHECK-NEXT: .address_size 64
// SM100A:      .version 8.6
// SM100A-NEXT: .target sm_100a

// CHECK:      .visible .entry copy_loop(
// CHECK-NEXT:   .param .u64 copy_loop_param_0,
// CHECK-NEXT:   .param .u64 copy_loop_param_1
// CHECK-NEXT: )
// CHECK-NEXT: .reqntid 32, 1, 1
// CHECK-NEXT: {
// CHECK-NEXT:   .reg .pred %p<2>;
// CHECK-NEXT:   .reg .b64 %rd<{{[0-9]+}}>;
// CHECK-NEXT:   .reg .f32 %f<2>;
// CHECK-EMPTY:
// CHECK-NEXT:   ld.param.u64 %rd1, [copy_loop_param_0];
// CHECK-NEXT:   cvta.to.global.u64 %[[A:rd[0-9]+]], %rd1;
// CHECK-NEXT:   ld.param.u64 %rd3, [copy_loop_param_1];
// CHECK-NEXT:   cvta.to.global.u64 %[[B:rd[0-9]+]], %rd3;
// The loop: the initial iv is moved into the condition block's register.
// CHECK:        mov.b64 %[[IV:rd[0-9]+]], %{{rd[0-9]+}};
// CHECK-NEXT:   bra.uni $L__BB0_1;
// CHECK-NEXT: $L__BB0_1:
// CHECK-NEXT:   setp.lt.s64 %p1, %[[IV]], %{{rd[0-9]+}};
// CHECK-NEXT:   @%p1 bra $L__BB0_2;
// CHECK-NEXT:   bra.uni $L__BB0_3;
// CHECK-NEXT: $L__BB0_2:
// CHECK:        add.u64 %[[SRC:rd[0-9]+]], %[[A]], %{{rd[0-9]+}};
// CHECK-NEXT:   ld.global.f32 %f1, [%[[SRC]]+4];
// CHECK:        add.u64 %[[DST:rd[0-9]+]], %[[B]], %{{rd[0-9]+}};
// CHECK-NEXT:   st.global.f32 [%[[DST]]], %f1;
// CHECK-NEXT:   add.s64 %[[NEXT:rd[0-9]+]], %[[IV]], %{{rd[0-9]+}};
// CHECK-NEXT:   mov.b64 %[[IV]], %[[NEXT]];
// CHECK-NEXT:   bra.uni $L__BB0_1;
// CHECK-NEXT: $L__BB0_3:
// CHECK-NEXT:   ret;
// CHECK-NEXT: }
func.func @copy_loop(%A: memref<17xf32, #bulkred.scope<global>>, %B: memref<16xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %j = arith.addi %i, %c1 : index
    %v = memref.load %A[%j] : memref<17xf32, #bulkred.scope<global>>
    memref.store %v, %B[%i] : memref<16xf32, #bulkred.scope<global>>
  }
  func.return
}
