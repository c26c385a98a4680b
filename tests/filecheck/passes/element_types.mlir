// Every element type the bulkred verifier accepts (ops/tile/buffers.py ELEMENT_TYPES) lowers
// through lower-tile-reductions to ptx arithmetic of that type, and through
// bulkred-to-ptx to PTX that ptxas assembles, for sm_90a and sm_100a: every kind valid
// for it (prod: mul.rn / mul.lo), float max/min NaN-propagating (max.NaN; f64 through
// setp.nan/selp) and with ignore_nan (the plain max).
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @k_i16
// PTX-LABEL: .visible .entry k_i16(
// CHECK: ptx.add s16 {{.*}} : i16
// PTX: add.s16 
// CHECK: ptx.mul.lo s16 {{.*}} : i16
// PTX: mul.lo.s16 
// CHECK: ptx.max s16 {{.*}} : i16
// PTX: max.s16 
// CHECK: ptx.min s16 {{.*}} : i16
// PTX: min.s16 
// CHECK: ptx.and b16 {{.*}} : i16
// PTX: and.b16 
// CHECK: ptx.or b16 {{.*}} : i16
// PTX: or.b16 
// CHECK: ptx.xor b16 {{.*}} : i16
// PTX: xor.b16 
func.func @k_i16(%A: memref<3x9xi16, #bulkred.scope<global>>, %B: memref<3xi16, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xi16, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xi16, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xi16, #bulkred.scope<global>>, memref<3x9xi16, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xi16, #bulkred.scope<global>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce and thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce or thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.reduce xor thread accum %a, %b : memref<3x9xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xi16, #bulkred.scope<local>>, memref<3xi16, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_i32
// PTX-LABEL: .visible .entry k_i32(
// CHECK: ptx.add s32 {{.*}} : i32
// PTX: add.s32 
// CHECK: ptx.mul.lo s32 {{.*}} : i32
// PTX: mul.lo.s32 
// CHECK: ptx.max s32 {{.*}} : i32
// PTX: max.s32 
// CHECK: ptx.min s32 {{.*}} : i32
// PTX: min.s32 
// CHECK: ptx.and b32 {{.*}} : i32
// PTX: and.b32 
// CHECK: ptx.or b32 {{.*}} : i32
// PTX: or.b32 
// CHECK: ptx.xor b32 {{.*}} : i32
// PTX: xor.b32 
func.func @k_i32(%A: memref<3x9xi32, #bulkred.scope<global>>, %B: memref<3xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xi32, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xi32, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xi32, #bulkred.scope<global>>, memref<3x9xi32, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xi32, #bulkred.scope<global>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce and thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce or thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.reduce xor thread accum %a, %b : memref<3x9xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xi32, #bulkred.scope<local>>, memref<3xi32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_i64
// PTX-LABEL: .visible .entry k_i64(
// CHECK: ptx.add s64 {{.*}} : i64
// PTX: add.s64 
// CHECK: ptx.mul.lo s64 {{.*}} : i64
// PTX: mul.lo.s64 
// CHECK: ptx.max s64 {{.*}} : i64
// PTX: max.s64 
// CHECK: ptx.min s64 {{.*}} : i64
// PTX: min.s64 
// CHECK: ptx.and b64 {{.*}} : i64
// PTX: and.b64 
// CHECK: ptx.or b64 {{.*}} : i64
// PTX: or.b64 
// CHECK: ptx.xor b64 {{.*}} : i64
// PTX: xor.b64 
func.func @k_i64(%A: memref<3x9xi64, #bulkred.scope<global>>, %B: memref<3xi64, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xi64, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xi64, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xi64, #bulkred.scope<global>>, memref<3x9xi64, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xi64, #bulkred.scope<global>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce and thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce or thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.reduce xor thread accum %a, %b : memref<3x9xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xi64, #bulkred.scope<local>>, memref<3xi64, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_f16
// PTX-LABEL: .visible .entry k_f16(
// CHECK: ptx.add rn f16 {{.*}} : f16
// PTX: add.rn.f16 
// CHECK: ptx.mul rn f16 {{.*}} : f16
// PTX: mul.rn.f16 
// CHECK: ptx.max NaN f16 {{.*}} : f16
// PTX: max.NaN.f16 
// CHECK: ptx.min NaN f16 {{.*}} : f16
// PTX: min.NaN.f16 
// ignore_nan: the plain form
// CHECK: ptx.max f16 {{.*}} : f16
// PTX: max.f16 
func.func @k_f16(%A: memref<3x9xf16, #bulkred.scope<global>>, %B: memref<3xf16, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xf16, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xf16, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xf16, #bulkred.scope<global>>, memref<3x9xf16, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xf16, #bulkred.scope<global>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.reduce max thread accum ignore_nan %a, %b : memref<3x9xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xf16, #bulkred.scope<local>>, memref<3xf16, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_bf16
// PTX-LABEL: .visible .entry k_bf16(
// CHECK: ptx.add rn bf16 {{.*}} : bf16
// PTX: add.rn.bf16 
// CHECK: ptx.mul rn bf16 {{.*}} : bf16
// PTX: mul.rn.bf16 
// CHECK: ptx.max NaN bf16 {{.*}} : bf16
// PTX: max.NaN.bf16 
// CHECK: ptx.min NaN bf16 {{.*}} : bf16
// PTX: min.NaN.bf16 
// ignore_nan: the plain form
// CHECK: ptx.max bf16 {{.*}} : bf16
// PTX: max.bf16 
func.func @k_bf16(%A: memref<3x9xbf16, #bulkred.scope<global>>, %B: memref<3xbf16, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xbf16, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xbf16, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xbf16, #bulkred.scope<global>>, memref<3x9xbf16, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xbf16, #bulkred.scope<global>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.reduce max thread accum ignore_nan %a, %b : memref<3x9xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xbf16, #bulkred.scope<local>>, memref<3xbf16, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_f32
// PTX-LABEL: .visible .entry k_f32(
// CHECK: ptx.add rn f32 {{.*}} : f32
// PTX: add.rn.f32 
// CHECK: ptx.mul rn f32 {{.*}} : f32
// PTX: mul.rn.f32 
// CHECK: ptx.max NaN f32 {{.*}} : f32
// PTX: max.NaN.f32 
// CHECK: ptx.min NaN f32 {{.*}} : f32
// PTX: min.NaN.f32 
// ignore_nan: the plain form
// CHECK: ptx.max f32 {{.*}} : f32
// PTX: max.f32 
func.func @k_f32(%A: memref<3x9xf32, #bulkred.scope<global>>, %B: memref<3xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xf32, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xf32, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xf32, #bulkred.scope<global>>, memref<3x9xf32, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xf32, #bulkred.scope<global>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.reduce max thread accum ignore_nan %a, %b : memref<3x9xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @k_f64
// PTX-LABEL: .visible .entry k_f64(
// CHECK: ptx.add rn f64 {{.*}} : f64
// PTX: add.rn.f64 
// CHECK: ptx.mul rn f64 {{.*}} : f64
// PTX: mul.rn.f64 
// max.f64 has no .NaN: a NaN operand selects their sum (a NaN)
// CHECK: ptx.max f64 {{.*}} : f64
// CHECK: ptx.setp nan f64
// CHECK: ptx.selp f64
// PTX: max.f64 
// PTX: setp.nan.f64 
// PTX: selp.f64 
// CHECK: ptx.min f64 {{.*}} : f64
// CHECK: ptx.setp nan f64
// CHECK: ptx.selp f64
// PTX: min.f64 
// PTX: setp.nan.f64 
// PTX: selp.f64 
// ignore_nan: max.f64 alone
// CHECK: ptx.max f64 {{.*}} : f64
// CHECK-NOT: ptx.setp
func.func @k_f64(%A: memref<3x9xf64, #bulkred.scope<global>>, %B: memref<3xf64, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  %a = memref.alloca() : memref<3x9xf64, #bulkred.scope<local>>
  %b = memref.alloca() : memref<3xf64, #bulkred.scope<local>>
  bulkred.copy %A, %a : memref<3x9xf64, #bulkred.scope<global>>, memref<3x9xf64, #bulkred.scope<local>>
  bulkred.copy %B, %b : memref<3xf64, #bulkred.scope<global>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.reduce sum thread accum %a, %b : memref<3x9xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.reduce prod thread accum %a, %b : memref<3x9xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.reduce max thread accum %a, %b : memref<3x9xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.reduce min thread accum %a, %b : memref<3x9xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.reduce max thread accum ignore_nan %a, %b : memref<3x9xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<local>>
  bulkred.copy %b, %B : memref<3xf64, #bulkred.scope<local>>, memref<3xf64, #bulkred.scope<global>>
  func.return
}
