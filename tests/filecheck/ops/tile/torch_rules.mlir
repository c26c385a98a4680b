// The bulkred.reduce forms of torch's rules (ops/tile/reduce.py, docs/fused.md): a float
// `correction` (torch's correction=1.3) prints as an f64 attribute, an int as before; the
// prologue `cast` converts each element to dst's type first (a narrower float or
// integer, an integer or bool into a float: logsumexp of int32); the prologue
// `nonzero` counts into a float (vector_norm(x, 0)) and any/all write ui8 (torch's
// uint8 any). Each prints as written, parses back from its own output, round-trips
// through the generic form, and is lowered for sm_90a.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @var_float_correction
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction 1.300000e+00 : f64 %{{.*}}, %{{.*}} aux %{{.*}} : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// GENERIC:     correction = 1.300000e+00 : f64
// GENERIC:     correction = 1 : i64
// PTX-LABEL:   .entry var_float_correction(
func.func @var_float_correction(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>, %m: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce var grid axes [1 : i64] correction 1.3 : f64 %x, %v aux %m : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// CHECK-LABEL: func.func @var_int_correction
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %{{.*}}, %{{.*}} :
func.func @var_int_correction(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// sum(float64, dtype=float32): each element rounded to f32 (cvt.rn.f32.f64), summed in f32.
// CHECK-LABEL: func.func @narrower_sum
// CHECK:       bulkred.reduce sum grid prologue [#bulkred.map<cast>] %{{.*}}, %{{.*}} : memref<4096xf64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
// PTX-LABEL:   .entry narrower_sum(
// PTX:         cvt.rn.f32.f64
func.func @narrower_sum(%x: memref<4096xf64, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce sum grid prologue [#bulkred.map<cast>] %x, %y : memref<4096xf64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// logsumexp of int32 into f32 (torch's rule): cvt.rn.f32.s32 as each element is read.
// CHECK-LABEL: func.func @logsumexp_of_int32
// CHECK:       bulkred.reduce logsumexp grid axes [1 : i64] prologue [#bulkred.map<cast>] %{{.*}}, %{{.*}} : memref<64x128xi32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// PTX-LABEL:   .entry logsumexp_of_int32(
// PTX:         cvt.rn.f32.s32
func.func @logsumexp_of_int32(%x: memref<64x128xi32, #bulkred.scope<global>>, %y: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce logsumexp grid axes [1 : i64] prologue [#bulkred.map<cast>] %x, %y : memref<64x128xi32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// vector_norm(x, 0): the count of nonzeros into f32 (setp.neu: NaN counts).
// CHECK-LABEL: func.func @count_into_float
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<nonzero>] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// PTX-LABEL:   .entry count_into_float(
// PTX:         setp.neu.f32
func.func @count_into_float(%x: memref<64x128xf32, #bulkred.scope<global>>, %n: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<nonzero>] %x, %n : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// torch's any of a uint8 tensor: 0 or 1 into ui8.
// CHECK-LABEL: func.func @any_into_ui8
// CHECK:       bulkred.reduce any grid axes [1 : i64] prologue [#bulkred.map<nonzero>] %{{.*}}, %{{.*}} : memref<64x128xui8, #bulkred.scope<global>>, memref<64xui8, #bulkred.scope<global>>
// PTX-LABEL:   .entry any_into_ui8(
// PTX:         st.global.b8
func.func @any_into_ui8(%u: memref<64x128xui8, #bulkred.scope<global>>, %a: memref<64xui8, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce any grid axes [1 : i64] prologue [#bulkred.map<nonzero>] %u, %a : memref<64x128xui8, #bulkred.scope<global>>, memref<64xui8, #bulkred.scope<global>>
  func.return
}

// A negative correction, as torch takes it: M2 / (N + 1).
// CHECK-LABEL: func.func @var_negative_correction
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction -1 : i64 %{{.*}}, %{{.*}} :
// PTX-LABEL:   .entry var_negative_correction(
func.func @var_negative_correction(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce var grid axes [1 : i64] correction -1 : i64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// CHECK-LABEL: func.func @var_negative_float_correction
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction -5.000000e-01 : f64 %{{.*}}, %{{.*}} :
// PTX-LABEL:   .entry var_negative_float_correction(
func.func @var_negative_float_correction(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.kernel} {
  bulkred.reduce var grid axes [1 : i64] correction -0.5 : f64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}
