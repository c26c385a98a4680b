// legalize-for-target: before sm_100 the packed add and the three-input max/min
// become scalar instructions with the same qualifiers; on sm_100 nothing changes.
// RUN: bulkred-opt %s --split-input-file -p 'legalize-for-target{target=sm_90a}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p 'legalize-for-target{target=sm_100a}' | filecheck %s --check-prefix=SM100
// RUN: bulkred-opt %s --split-input-file -p 'legalize-for-target,check-target{target=sm_90a}' | filecheck %s

// CHECK-LABEL: func.func @packed_add
// CHECK-NEXT:    %[[A0:.*]], %[[A1:.*]] = ptx.mov.unpack %a : vector<2xf32>
// CHECK-NEXT:    %[[B0:.*]], %[[B1:.*]] = ptx.mov.unpack %b : vector<2xf32>
// CHECK-NEXT:    %[[LO:.*]] = ptx.add rn ftz f32 %[[A0]], %[[B0]] : f32
// CHECK-NEXT:    %[[HI:.*]] = ptx.add rn ftz f32 %[[A1]], %[[B1]] : f32
// CHECK-NEXT:    %[[P:.*]] = ptx.mov.pack %[[LO]], %[[HI]] : vector<2xf32>
// CHECK-NEXT:    %[[C0:.*]], %[[C1:.*]] = ptx.mov.unpack %b : vector<2xf32>
// CHECK-NEXT:    %[[LO2:.*]] = ptx.add rz f32 %[[LO]], %[[C0]] : f32
// CHECK-NEXT:    %[[HI2:.*]] = ptx.add rz f32 %[[HI]], %[[C1]] : f32
// CHECK-NEXT:    %[[P2:.*]] = ptx.mov.pack %[[LO2]], %[[HI2]] : vector<2xf32>
// CHECK-NEXT:    func.return %[[P]], %[[P2]] : vector<2xf32>, vector<2xf32>
// SM100-LABEL: func.func @packed_add
// SM100-NEXT:    %[[S:.*]] = ptx.add.f32x2 rn ftz %a, %b : vector<2xf32>
// SM100-NEXT:    ptx.add.f32x2 rz %[[S]], %b : vector<2xf32>
func.func @packed_add(%a: vector<2xf32>, %b: vector<2xf32>) -> (vector<2xf32>, vector<2xf32>) {
  %0 = ptx.add.f32x2 rn ftz %a, %b : vector<2xf32>
  %1 = ptx.add.f32x2 rz %0, %b : vector<2xf32>
  func.return %0, %1 : vector<2xf32>, vector<2xf32>
}

// -----

// CHECK-LABEL: func.func @three_input
// CHECK-NEXT:    %[[M:.*]] = ptx.max ftz f32 %x, %y : f32
// CHECK-NEXT:    %[[M2:.*]] = ptx.max ftz f32 %[[M]], %z : f32
// CHECK-NEXT:    %[[N:.*]] = ptx.min f32 %z, %[[M2]] : f32
// CHECK-NEXT:    %[[N2:.*]] = ptx.min f32 %[[N]], %x : f32
// CHECK-NEXT:    func.return %[[N2]] : f32
// SM100-LABEL: func.func @three_input
// SM100-NEXT:    ptx.max3 ftz %x, %y, %z : f32
// SM100-NEXT:    ptx.min3 %z, %{{.*}}, %x : f32
func.func @three_input(%x: f32, %y: f32, %z: f32) -> f32 {
  %0 = ptx.max3 ftz %x, %y, %z : f32
  %1 = ptx.min3 %z, %0, %x : f32
  func.return %1 : f32
}

// -----

// .NaN keeps: max.NaN of three is max.NaN twice (any NaN input gives the canonical NaN in
// both), which sm_90a runs (max.NaN.f32 needs sm_80).
// CHECK-LABEL: func.func @three_input_nan
// CHECK-NEXT:    %[[M:.*]] = ptx.max ftz NaN f32 %x, %y : f32
// CHECK-NEXT:    %[[M2:.*]] = ptx.max ftz NaN f32 %[[M]], %z : f32
// CHECK-NEXT:    %[[N:.*]] = ptx.min NaN f32 %z, %[[M2]] : f32
// CHECK-NEXT:    %[[N2:.*]] = ptx.min NaN f32 %[[N]], %x : f32
// CHECK-NEXT:    func.return %[[N2]] : f32
// SM100-LABEL: func.func @three_input_nan
// SM100-NEXT:    ptx.max3 ftz NaN %x, %y, %z : f32
// SM100-NEXT:    ptx.min3 NaN %z, %{{.*}}, %x : f32
func.func @three_input_nan(%x: f32, %y: f32, %z: f32) -> f32 {
  %0 = ptx.max3 ftz NaN %x, %y, %z : f32
  %1 = ptx.min3 NaN %z, %0, %x : f32
  func.return %1 : f32
}

// -----

// The sm100_packed sum of 16 lowered for sm_100a, then legalized for sm_90a: the
// unpack of each freshly packed pair folds away, leaving 14 scalar ftz adds (the 7
// packed ones) and the final scalar add, and no .b64 moves.
// CHECK-LABEL: func.func @sum16
// CHECK-NOT:      ptx.mov
// CHECK-COUNT-14: ptx.add rn ftz f32
// CHECK-NEXT:     %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:     memref.store %[[R]]
// CHECK-NOT:      ptx.
// SM100-LABEL: func.func @sum16
// SM100-COUNT-16: memref.load
// SM100-COUNT-7:  ptx.add.f32x2 rn ftz
func.func @sum16(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c11 = arith.constant 11 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %c14 = arith.constant 14 : index
  %c15 = arith.constant 15 : index
  %x0 = memref.load %a[%c0] : memref<16xf32, #bulkred.scope<local>>
  %x1 = memref.load %a[%c1] : memref<16xf32, #bulkred.scope<local>>
  %x2 = memref.load %a[%c2] : memref<16xf32, #bulkred.scope<local>>
  %x3 = memref.load %a[%c3] : memref<16xf32, #bulkred.scope<local>>
  %x4 = memref.load %a[%c4] : memref<16xf32, #bulkred.scope<local>>
  %x5 = memref.load %a[%c5] : memref<16xf32, #bulkred.scope<local>>
  %x6 = memref.load %a[%c6] : memref<16xf32, #bulkred.scope<local>>
  %x7 = memref.load %a[%c7] : memref<16xf32, #bulkred.scope<local>>
  %x8 = memref.load %a[%c8] : memref<16xf32, #bulkred.scope<local>>
  %x9 = memref.load %a[%c9] : memref<16xf32, #bulkred.scope<local>>
  %x10 = memref.load %a[%c10] : memref<16xf32, #bulkred.scope<local>>
  %x11 = memref.load %a[%c11] : memref<16xf32, #bulkred.scope<local>>
  %x12 = memref.load %a[%c12] : memref<16xf32, #bulkred.scope<local>>
  %x13 = memref.load %a[%c13] : memref<16xf32, #bulkred.scope<local>>
  %x14 = memref.load %a[%c14] : memref<16xf32, #bulkred.scope<local>>
  %x15 = memref.load %a[%c15] : memref<16xf32, #bulkred.scope<local>>
  %p0 = ptx.mov.pack %x0, %x1 : vector<2xf32>
  %q0 = ptx.mov.pack %x8, %x9 : vector<2xf32>
  %s0 = ptx.add.f32x2 rn ftz %p0, %q0 : vector<2xf32>
  %a0, %a1 = ptx.mov.unpack %s0 : vector<2xf32>
  %p1 = ptx.mov.pack %x2, %x3 : vector<2xf32>
  %q1 = ptx.mov.pack %x10, %x11 : vector<2xf32>
  %s1 = ptx.add.f32x2 rn ftz %p1, %q1 : vector<2xf32>
  %a2, %a3 = ptx.mov.unpack %s1 : vector<2xf32>
  %p2 = ptx.mov.pack %x4, %x5 : vector<2xf32>
  %q2 = ptx.mov.pack %x12, %x13 : vector<2xf32>
  %s2 = ptx.add.f32x2 rn ftz %p2, %q2 : vector<2xf32>
  %a4, %a5 = ptx.mov.unpack %s2 : vector<2xf32>
  %p3 = ptx.mov.pack %x6, %x7 : vector<2xf32>
  %q3 = ptx.mov.pack %x14, %x15 : vector<2xf32>
  %s3 = ptx.add.f32x2 rn ftz %p3, %q3 : vector<2xf32>
  %a6, %a7 = ptx.mov.unpack %s3 : vector<2xf32>
  %p4 = ptx.mov.pack %a0, %a1 : vector<2xf32>
  %q4 = ptx.mov.pack %a2, %a3 : vector<2xf32>
  %s4 = ptx.add.f32x2 rn ftz %p4, %q4 : vector<2xf32>
  %t0, %t1 = ptx.mov.unpack %s4 : vector<2xf32>
  %p5 = ptx.mov.pack %a4, %a5 : vector<2xf32>
  %q5 = ptx.mov.pack %a6, %a7 : vector<2xf32>
  %s5 = ptx.add.f32x2 rn ftz %p5, %q5 : vector<2xf32>
  %t4, %t5 = ptx.mov.unpack %s5 : vector<2xf32>
  %p6 = ptx.mov.pack %t0, %t1 : vector<2xf32>
  %q6 = ptx.mov.pack %t4, %t5 : vector<2xf32>
  %s6 = ptx.add.f32x2 rn ftz %p6, %q6 : vector<2xf32>
  %r0, %r1 = ptx.mov.unpack %s6 : vector<2xf32>
  %r = ptx.add rn f32 %r0, %r1 : f32
  memref.store %r, %b[%c0] : memref<1xf32, #bulkred.scope<local>>
  func.return
}
