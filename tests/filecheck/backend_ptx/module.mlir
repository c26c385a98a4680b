// Launch directives, the .version the ops need, scalar parameters, array
// declarations, several kernels in one module.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx -t 'ptx{target=sm_100a}' | filecheck %s

// A cluster launch: .reqntid from 'block', cluster directives from 'cluster'.
// CHECK:      .version 8.6
// CHECK-NEXT: .target sm_100a
// CHECK:      .visible .entry cluster_kernel()
// CHECK-NEXT: .reqntid 128, 2, 1
// CHECK-NEXT: .reqnctapercluster 2, 1, 1
// CHECK-NEXT: .explicitcluster
// CHECK-NEXT: {
func.func @cluster_kernel() attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [128, 2], cluster = [2]>} {
  func.return
}

// -----

// max3 needs PTX ISA 8.8: the module says so (and no launch attribute, no directive).
// CHECK:      .version 8.8
// CHECK:      .visible .entry three_input(
// CHECK-NEXT:   .param .f32 three_input_param_0
// CHECK-NEXT: )
// CHECK-NEXT: {
// CHECK:        max.f32 %f2, %f1, %f1, %f1;
func.func @three_input(%x: f32) {
  %m = ptx.max3 %x, %x, %x : f32
  func.return
}

// -----

// Scalar parameters: one .param per argument, loaded at entry (index is i64).
// CHECK-LABEL: .visible .entry scalars(
// CHECK-NEXT:   .param .b16 scalars_param_0,
// CHECK-NEXT:   .param .u32 scalars_param_1,
// CHECK-NEXT:   .param .u64 scalars_param_2,
// CHECK-NEXT:   .param .b16 scalars_param_3,
// CHECK-NEXT:   .param .b16 scalars_param_4,
// CHECK-NEXT:   .param .f32 scalars_param_5,
// CHECK-NEXT:   .param .f64 scalars_param_6,
// CHECK-NEXT:   .param .u64 scalars_param_7
// CHECK-NEXT: )
// CHECK:        .reg .b16 %rs<2>;
// CHECK-NEXT:   .reg .b16 %h<3>;
// CHECK-NEXT:   .reg .b32 %r<2>;
// CHECK-NEXT:   .reg .b64 %rd<3>;
// CHECK-NEXT:   .reg .f32 %f<2>;
// CHECK-NEXT:   .reg .f64 %fd<2>;
// CHECK-EMPTY:
// CHECK-NEXT:   ld.param.b16 %rs1, [scalars_param_0];
// CHECK-NEXT:   ld.param.u32 %r1, [scalars_param_1];
// CHECK-NEXT:   ld.param.u64 %rd1, [scalars_param_2];
// CHECK-NEXT:   ld.param.b16 %h1, [scalars_param_3];
// CHECK-NEXT:   ld.param.b16 %h2, [scalars_param_4];
// CHECK-NEXT:   ld.param.f32 %f1, [scalars_param_5];
// CHECK-NEXT:   ld.param.f64 %fd1, [scalars_param_6];
// CHECK-NEXT:   ld.param.u64 %rd2, [scalars_param_7];
// CHECK-NEXT:   ret;
func.func @scalars(%a: i16, %b: i32, %c: i64, %d: f16, %e: bf16, %f: f32, %g: f64, %h: index) {
  func.return
}

// -----

// Arrays: declared first in the body; shared addresses are 32-bit (mov.u32).
// CHECK-LABEL: .visible .entry arrays(
// CHECK:        .shared .align 128 .b8 __shared0_S[256];
// CHECK-NEXT:   .local .align 16 .b8 __local1_L[12];
// CHECK-NEXT:   .reg
// CHECK:        mov.u32 %[[S:r[0-9]+]], __shared0_S;
// CHECK-NEXT:   mov.u64 %[[L:rd[0-9]+]], __local1_L;
// CHECK:        ld.local.f32 %[[V:f[0-9]+]], [%[[L]]+8];
// CHECK-NEXT:   st.shared::cta.f32 [%[[S]]+252], %[[V]];
func.func @arrays() {
  %S = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %L = memref.alloca() : memref<3xf32, #bulkred.scope<local>>
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %v = memref.load %L[%c2] : memref<3xf32, #bulkred.scope<local>>
  memref.store %v, %S[%c63] : memref<64xf32, #bulkred.scope<shared>>
  func.return
}

// -----

// Two kernels: one frame each; labels are numbered per kernel.
// CHECK-LABEL: .visible .entry first(
// CHECK:       $L__BB0_1:
// CHECK-LABEL: .visible .entry second(
// CHECK:       bra.uni $L__BB1_1;
// CHECK-NEXT:  $L__BB1_1:
func.func @first() {
  cf.br ^bb1
^bb1:
  func.return
}
func.func @second() {
  cf.br ^bb1
^bb1:
  func.return
}
