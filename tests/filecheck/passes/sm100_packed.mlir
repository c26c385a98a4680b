// sm100_packed on sm_100a: the exact sequence of docs/lowering.md ("sm100_packed"), TVM
// TIRx's order, for sum, max and min, with and without accum, at the chunk, remainder and
// loop boundaries. max/min are .NaN (NaN-propagating) by default, plain with ignore_nan.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_100a}' | filecheck %s

// -----

// n = 17: the first chunk, one further chunk (8..15: four packed adds), the remainder
// i = 16 into ls[0], the tree.
// CHECK-LABEL: func.func @sum17
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[X8:.*]] = memref.load %a[%[[C8]]]
// CHECK-NEXT:    %[[C9:.*]] = arith.constant 9 : index
// CHECK-NEXT:    %[[X9:.*]] = memref.load %a[%[[C9]]]
// CHECK-NEXT:    %[[C10:.*]] = arith.constant 10 : index
// CHECK-NEXT:    %[[X10:.*]] = memref.load %a[%[[C10]]]
// CHECK-NEXT:    %[[C11:.*]] = arith.constant 11 : index
// CHECK-NEXT:    %[[X11:.*]] = memref.load %a[%[[C11]]]
// CHECK-NEXT:    %[[C12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[X12:.*]] = memref.load %a[%[[C12]]]
// CHECK-NEXT:    %[[C13:.*]] = arith.constant 13 : index
// CHECK-NEXT:    %[[X13:.*]] = memref.load %a[%[[C13]]]
// CHECK-NEXT:    %[[C14:.*]] = arith.constant 14 : index
// CHECK-NEXT:    %[[X14:.*]] = memref.load %a[%[[C14]]]
// CHECK-NEXT:    %[[C15:.*]] = arith.constant 15 : index
// CHECK-NEXT:    %[[X15:.*]] = memref.load %a[%[[C15]]]
// CHECK-NEXT:    %[[P0:.*]] = ptx.mov.pack %[[X0]], %[[X1]] : vector<2xf32>
// CHECK-NEXT:    %[[Q0:.*]] = ptx.mov.pack %[[X8]], %[[X9]] : vector<2xf32>
// CHECK-NEXT:    %[[S0:.*]] = ptx.add.f32x2 rn ftz %[[P0]], %[[Q0]] : vector<2xf32>
// CHECK-NEXT:    %[[A0:.*]], %[[A1:.*]] = ptx.mov.unpack %[[S0]] : vector<2xf32>
// CHECK-NEXT:    %[[P1:.*]] = ptx.mov.pack %[[X2]], %[[X3]] : vector<2xf32>
// CHECK-NEXT:    %[[Q1:.*]] = ptx.mov.pack %[[X10]], %[[X11]] : vector<2xf32>
// CHECK-NEXT:    %[[S1:.*]] = ptx.add.f32x2 rn ftz %[[P1]], %[[Q1]] : vector<2xf32>
// CHECK-NEXT:    %[[A2:.*]], %[[A3:.*]] = ptx.mov.unpack %[[S1]] : vector<2xf32>
// CHECK-NEXT:    %[[P2:.*]] = ptx.mov.pack %[[X4]], %[[X5]] : vector<2xf32>
// CHECK-NEXT:    %[[Q2:.*]] = ptx.mov.pack %[[X12]], %[[X13]] : vector<2xf32>
// CHECK-NEXT:    %[[S2:.*]] = ptx.add.f32x2 rn ftz %[[P2]], %[[Q2]] : vector<2xf32>
// CHECK-NEXT:    %[[A4:.*]], %[[A5:.*]] = ptx.mov.unpack %[[S2]] : vector<2xf32>
// CHECK-NEXT:    %[[P3:.*]] = ptx.mov.pack %[[X6]], %[[X7]] : vector<2xf32>
// CHECK-NEXT:    %[[Q3:.*]] = ptx.mov.pack %[[X14]], %[[X15]] : vector<2xf32>
// CHECK-NEXT:    %[[S3:.*]] = ptx.add.f32x2 rn ftz %[[P3]], %[[Q3]] : vector<2xf32>
// CHECK-NEXT:    %[[A6:.*]], %[[A7:.*]] = ptx.mov.unpack %[[S3]] : vector<2xf32>
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[X16:.*]] = memref.load %a[%[[C16]]]
// CHECK-NEXT:    %[[B0:.*]] = ptx.add rn f32 %[[A0]], %[[X16]] : f32
// CHECK-NEXT:    %[[P4:.*]] = ptx.mov.pack %[[B0]], %[[A1]] : vector<2xf32>
// CHECK-NEXT:    %[[Q4:.*]] = ptx.mov.pack %[[A2]], %[[A3]] : vector<2xf32>
// CHECK-NEXT:    %[[S4:.*]] = ptx.add.f32x2 rn ftz %[[P4]], %[[Q4]] : vector<2xf32>
// CHECK-NEXT:    %[[T0:.*]], %[[T1:.*]] = ptx.mov.unpack %[[S4]] : vector<2xf32>
// CHECK-NEXT:    %[[P5:.*]] = ptx.mov.pack %[[A4]], %[[A5]] : vector<2xf32>
// CHECK-NEXT:    %[[Q5:.*]] = ptx.mov.pack %[[A6]], %[[A7]] : vector<2xf32>
// CHECK-NEXT:    %[[S5:.*]] = ptx.add.f32x2 rn ftz %[[P5]], %[[Q5]] : vector<2xf32>
// CHECK-NEXT:    %[[T4:.*]], %[[T5:.*]] = ptx.mov.unpack %[[S5]] : vector<2xf32>
// CHECK-NEXT:    %[[P6:.*]] = ptx.mov.pack %[[T0]], %[[T1]] : vector<2xf32>
// CHECK-NEXT:    %[[Q6:.*]] = ptx.mov.pack %[[T4]], %[[T5]] : vector<2xf32>
// CHECK-NEXT:    %[[S6:.*]] = ptx.add.f32x2 rn ftz %[[P6]], %[[Q6]] : vector<2xf32>
// CHECK-NEXT:    %[[R0:.*]], %[[R1:.*]] = ptx.mov.unpack %[[S6]] : vector<2xf32>
// CHECK-NEXT:    %[[R:.*]] = ptx.add rn f32 %[[R0]], %[[R1]] : f32
// CHECK-NEXT:    memref.store %[[R]], %b[%[[C0]]] : memref<1xf32, #bulkred.scope<local>>
// CHECK-NEXT:    func.return
func.func @sum17(%a: memref<17xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<17xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 10 (issue 9's example): no further chunk; the remainder i = 8, 9 both into ls[0],
// in order, then the tree.
// CHECK-LABEL: func.func @sum10
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[X8:.*]] = memref.load %a[%[[C8]]]
// CHECK-NEXT:    %[[B0:.*]] = ptx.add rn f32 %[[X0]], %[[X8]] : f32
// CHECK-NEXT:    %[[C9:.*]] = arith.constant 9 : index
// CHECK-NEXT:    %[[X9:.*]] = memref.load %a[%[[C9]]]
// CHECK-NEXT:    %[[B1:.*]] = ptx.add rn f32 %[[B0]], %[[X9]] : f32
// CHECK-NEXT:    %[[P0:.*]] = ptx.mov.pack %[[B1]], %[[X1]] : vector<2xf32>
// CHECK-NEXT:    %[[Q0:.*]] = ptx.mov.pack %[[X2]], %[[X3]] : vector<2xf32>
// CHECK-NEXT:    %[[S0:.*]] = ptx.add.f32x2 rn ftz %[[P0]], %[[Q0]] : vector<2xf32>
// CHECK-NEXT:    %[[T0:.*]], %[[T1:.*]] = ptx.mov.unpack %[[S0]] : vector<2xf32>
// CHECK-NEXT:    %[[P1:.*]] = ptx.mov.pack %[[X4]], %[[X5]] : vector<2xf32>
// CHECK-NEXT:    %[[Q1:.*]] = ptx.mov.pack %[[X6]], %[[X7]] : vector<2xf32>
// CHECK-NEXT:    %[[S1:.*]] = ptx.add.f32x2 rn ftz %[[P1]], %[[Q1]] : vector<2xf32>
// CHECK-NEXT:    %[[T4:.*]], %[[T5:.*]] = ptx.mov.unpack %[[S1]] : vector<2xf32>
// CHECK-NEXT:    %[[P2:.*]] = ptx.mov.pack %[[T0]], %[[T1]] : vector<2xf32>
// CHECK-NEXT:    %[[Q2:.*]] = ptx.mov.pack %[[T4]], %[[T5]] : vector<2xf32>
// CHECK-NEXT:    %[[S2:.*]] = ptx.add.f32x2 rn ftz %[[P2]], %[[Q2]] : vector<2xf32>
// CHECK-NEXT:    %[[R0:.*]], %[[R1:.*]] = ptx.mov.unpack %[[S2]] : vector<2xf32>
// CHECK-NEXT:    %[[R:.*]] = ptx.add rn f32 %[[R0]], %[[R1]] : f32
// CHECK-NEXT:    memref.store %[[R]], %b[%[[C0]]]
// CHECK-NEXT:    func.return
func.func @sum10(%a: memref<10xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<10xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 8: no further chunk, no remainder: only the tree.
// CHECK-LABEL: func.func @sum8
// CHECK-COUNT-8: memref.load %a
// CHECK-NOT:     memref.load %a
// CHECK-NOT:     ptx.add rn f32
// CHECK-COUNT-3: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[
func.func @sum8(%a: memref<8xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 13: the remainder i = 8..12, five scalar adds chained through ls[0], then the tree.
// CHECK-LABEL: func.func @sum13
// CHECK-COUNT-8: memref.load %a
// CHECK-NOT:     ptx.add
// CHECK:         %[[X8:.*]] = memref.load %a
// CHECK-NEXT:    %[[B0:.*]] = ptx.add rn f32 %{{.*}}, %[[X8]] : f32
// CHECK-NEXT:    arith.constant 9
// CHECK-NEXT:    %[[X9:.*]] = memref.load %a
// CHECK-NEXT:    %[[B1:.*]] = ptx.add rn f32 %[[B0]], %[[X9]] : f32
// CHECK-NEXT:    arith.constant 10
// CHECK-NEXT:    %[[X10:.*]] = memref.load %a
// CHECK-NEXT:    %[[B2:.*]] = ptx.add rn f32 %[[B1]], %[[X10]] : f32
// CHECK-NEXT:    arith.constant 11
// CHECK-NEXT:    %[[X11:.*]] = memref.load %a
// CHECK-NEXT:    %[[B3:.*]] = ptx.add rn f32 %[[B2]], %[[X11]] : f32
// CHECK-NEXT:    arith.constant 12
// CHECK-NEXT:    %[[X12:.*]] = memref.load %a
// CHECK-NEXT:    %[[B4:.*]] = ptx.add rn f32 %[[B3]], %[[X12]] : f32
// CHECK-NEXT:    ptx.mov.pack %[[B4]], %{{.*}} : vector<2xf32>
// CHECK-COUNT-3: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[
func.func @sum13(%a: memref<13xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<13xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 16: one further chunk, no remainder.
// CHECK-LABEL: func.func @sum16
// CHECK-COUNT-16: memref.load %a
// CHECK-NOT:     ptx.add rn f32
// CHECK-COUNT-7: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[
func.func @sum16(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 32: three further chunks (12 packed adds, unrolled) and the tree (3).
// CHECK-LABEL: func.func @sum32
// CHECK-NOT:      scf.for
// CHECK-COUNT-8:  memref.load %a
// CHECK-NOT:      ptx.add
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-NOT:      memref.load %a
// CHECK-NOT:      ptx.add rn f32
// CHECK-COUNT-3:  ptx.add.f32x2 rn ftz
// CHECK-NOT:      ptx.add.f32x2
// CHECK:          %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:     memref.store %[[R]], %b[
func.func @sum32(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 33: three further chunks, the remainder i = 32, the tree.
// CHECK-LABEL: func.func @sum33
// CHECK-COUNT-8:  memref.load %a
// CHECK-NOT:      ptx.add
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-COUNT-8:  memref.load %a
// CHECK-COUNT-4:  ptx.add.f32x2 rn ftz
// CHECK-NOT:      ptx.add
// CHECK:          memref.load %a
// CHECK-NEXT:     ptx.add rn f32
// CHECK-NOT:      ptx.add rn f32
// CHECK-COUNT-3:  ptx.add.f32x2 rn ftz
// CHECK-NOT:      ptx.add.f32x2
// CHECK:          %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:     memref.store %[[R]], %b[
func.func @sum33(%a: memref<33xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<33xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// accum: the old dst[0] is loaded after the first chunk and starts ls[0] = src[0] + dst,
// a scalar add (no ftz); the result is stored as it is.
// CHECK-LABEL: func.func @sum16_accum
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[OLD:.*]] = memref.load %b[%[[C0]]] : memref<1xf32, #bulkred.scope<local>>
// CHECK-NEXT:    %[[L0:.*]] = ptx.add rn f32 %[[X0]], %[[OLD]] : f32
// CHECK-COUNT-8: memref.load %a
// CHECK-NEXT:    ptx.mov.pack %[[L0]], %[[X1]] : vector<2xf32>
// CHECK-COUNT-7: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[%[[C0]]]
// CHECK-NEXT:    func.return
func.func @sum16_accum(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread accum %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 75, accum: 8 further chunks, from 8 on a loop: 2 iterations of 4 chunks (32
// elements each, from index 8) carrying ls[0..7]; none left over; the remainder
// i = 72..74 into ls[0]; the tree.
// CHECK-LABEL: func.func @sum75_accum
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-COUNT-8: memref.load %a
// CHECK-NEXT:    %[[OLD:.*]] = memref.load %b[%[[C0]]]
// CHECK-NEXT:    %[[L0:.*]] = ptx.add rn f32 %{{.*}}, %[[OLD]] : f32
// CHECK:         %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK:         %[[LS0:[^,]*]], {{.*}} = scf.for %[[I:[^ ]*]] = %[[C0]] to %{{[^ ]*}} step %{{[^ ]*}} iter_args(%[[A0:[^ ]*]] = %[[L0]], {{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[I]], %[[C32]] : index
// CHECK-NEXT:      %[[IX:.*]] = arith.addi %[[BASE]], %[[C8]] : index
// CHECK-NEXT:      %[[Y:.*]] = memref.load %a[%[[IX]]]
// CHECK-COUNT-7:   memref.load %a
// CHECK-NEXT:      %[[P:.*]] = ptx.mov.pack %[[A0]], %{{.*}} : vector<2xf32>
// CHECK-NEXT:      %[[Q:.*]] = ptx.mov.pack %[[Y]], %{{.*}} : vector<2xf32>
// CHECK-NEXT:      ptx.add.f32x2 rn ftz %[[P]], %[[Q]]
// CHECK-COUNT-15:  ptx.add.f32x2 rn ftz
// CHECK-NOT:       ptx.add
// CHECK:           scf.yield {{.*}} : f32, f32, f32, f32, f32, f32, f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C72:.*]] = arith.constant 72 : index
// CHECK-NEXT:    %[[X72:.*]] = memref.load %a[%[[C72]]]
// CHECK-NEXT:    ptx.add rn f32 %[[LS0]], %[[X72]] : f32
// CHECK-COUNT-2: ptx.add rn f32
// CHECK-COUNT-3: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[%[[C0]]]
func.func @sum75_accum(%a: memref<75xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread accum %a, %b : memref<75xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 16389: 2047 further chunks: 511 iterations of 4, then 3 chunks unrolled (12 packed
// adds), the remainder i = 16384..16388, the tree. The IR does not grow with n.
// CHECK-LABEL: func.func @sum16389
// CHECK:         %[[C511:.*]] = arith.constant 511 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[C511]] step
// CHECK-COUNT-16:  ptx.add.f32x2 rn ftz
// CHECK:         scf.yield
// CHECK-NEXT:    }
// CHECK-NOT:     scf.for
// CHECK-COUNT-12: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         arith.constant 16384 : index
// CHECK-COUNT-5: ptx.add rn f32
// CHECK-COUNT-3: ptx.add.f32x2 rn ftz
// CHECK-NEXT:    ptx.mov.unpack
// CHECK-NEXT:    %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[
func.func @sum16389(%a: memref<16389xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<16389xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// max, n = 13, accum: t[i] = max(src[2i], src[2i+1]), but t[0] = max3(src[0], src[1], dst);
// no further chunk; the remainder i = 8..12 into t[0]; max(t[0], t[1]), then max3 with t[2], t[3].
// CHECK-LABEL: func.func @max13_accum
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[OLD:.*]] = memref.load %b[%[[C0]]]
// CHECK-NEXT:    %[[T0:.*]] = ptx.max3 NaN %[[X0]], %[[X1]], %[[OLD]] : f32
// CHECK-NEXT:    %[[T1:.*]] = ptx.max NaN f32 %[[X2]], %[[X3]] : f32
// CHECK-NEXT:    %[[T2:.*]] = ptx.max NaN f32 %[[X4]], %[[X5]] : f32
// CHECK-NEXT:    %[[T3:.*]] = ptx.max NaN f32 %[[X6]], %[[X7]] : f32
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[X8:.*]] = memref.load %a[%[[C8]]]
// CHECK-NEXT:    %[[U0:.*]] = ptx.max NaN f32 %[[T0]], %[[X8]] : f32
// CHECK-NEXT:    %[[C9:.*]] = arith.constant 9 : index
// CHECK-NEXT:    %[[X9:.*]] = memref.load %a[%[[C9]]]
// CHECK-NEXT:    %[[U1:.*]] = ptx.max NaN f32 %[[U0]], %[[X9]] : f32
// CHECK-NEXT:    %[[C10:.*]] = arith.constant 10 : index
// CHECK-NEXT:    %[[X10:.*]] = memref.load %a[%[[C10]]]
// CHECK-NEXT:    %[[U2:.*]] = ptx.max NaN f32 %[[U1]], %[[X10]] : f32
// CHECK-NEXT:    %[[C11:.*]] = arith.constant 11 : index
// CHECK-NEXT:    %[[X11:.*]] = memref.load %a[%[[C11]]]
// CHECK-NEXT:    %[[U3:.*]] = ptx.max NaN f32 %[[U2]], %[[X11]] : f32
// CHECK-NEXT:    %[[C12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[X12:.*]] = memref.load %a[%[[C12]]]
// CHECK-NEXT:    %[[U4:.*]] = ptx.max NaN f32 %[[U3]], %[[X12]] : f32
// CHECK-NEXT:    %[[R1:.*]] = ptx.max NaN f32 %[[U4]], %[[T1]] : f32
// CHECK-NEXT:    %[[R2:.*]] = ptx.max3 NaN %[[R1]], %[[T2]], %[[T3]] : f32
// CHECK-NEXT:    memref.store %[[R2]], %b[%[[C0]]]
// CHECK-NEXT:    func.return
func.func @max13_accum(%a: memref<13xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread accum %a, %b : memref<13xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 8: the four pairs, then the final tree.
// CHECK-LABEL: func.func @min8
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[T0:.*]] = ptx.min NaN f32 %[[X0]], %[[X1]] : f32
// CHECK-NEXT:    %[[T1:.*]] = ptx.min NaN f32 %[[X2]], %[[X3]] : f32
// CHECK-NEXT:    %[[T2:.*]] = ptx.min NaN f32 %[[X4]], %[[X5]] : f32
// CHECK-NEXT:    %[[T3:.*]] = ptx.min NaN f32 %[[X6]], %[[X7]] : f32
// CHECK-NEXT:    %[[R1:.*]] = ptx.min NaN f32 %[[T0]], %[[T1]] : f32
// CHECK-NEXT:    %[[R2:.*]] = ptx.min3 NaN %[[R1]], %[[T2]], %[[T3]] : f32
// CHECK-NEXT:    memref.store %[[R2]], %b[%[[C0]]]
func.func @min8(%a: memref<8xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 17: one further chunk, t[i] = min3(t[i], src[8+2i], src[9+2i]); the remainder
// i = 16 into t[0].
// CHECK-LABEL: func.func @min17
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %a[%[[C0]]]
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[%[[C1]]]
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[%[[C2]]]
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[%[[C3]]]
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[%[[C4]]]
// CHECK-NEXT:    %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[%[[C5]]]
// CHECK-NEXT:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[%[[C6]]]
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[%[[C7]]]
// CHECK-NEXT:    %[[T0:.*]] = ptx.min NaN f32 %[[X0]], %[[X1]] : f32
// CHECK-NEXT:    %[[T1:.*]] = ptx.min NaN f32 %[[X2]], %[[X3]] : f32
// CHECK-NEXT:    %[[T2:.*]] = ptx.min NaN f32 %[[X4]], %[[X5]] : f32
// CHECK-NEXT:    %[[T3:.*]] = ptx.min NaN f32 %[[X6]], %[[X7]] : f32
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[X8:.*]] = memref.load %a[%[[C8]]]
// CHECK-NEXT:    %[[C9:.*]] = arith.constant 9 : index
// CHECK-NEXT:    %[[X9:.*]] = memref.load %a[%[[C9]]]
// CHECK-NEXT:    %[[C10:.*]] = arith.constant 10 : index
// CHECK-NEXT:    %[[X10:.*]] = memref.load %a[%[[C10]]]
// CHECK-NEXT:    %[[C11:.*]] = arith.constant 11 : index
// CHECK-NEXT:    %[[X11:.*]] = memref.load %a[%[[C11]]]
// CHECK-NEXT:    %[[C12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[X12:.*]] = memref.load %a[%[[C12]]]
// CHECK-NEXT:    %[[C13:.*]] = arith.constant 13 : index
// CHECK-NEXT:    %[[X13:.*]] = memref.load %a[%[[C13]]]
// CHECK-NEXT:    %[[C14:.*]] = arith.constant 14 : index
// CHECK-NEXT:    %[[X14:.*]] = memref.load %a[%[[C14]]]
// CHECK-NEXT:    %[[C15:.*]] = arith.constant 15 : index
// CHECK-NEXT:    %[[X15:.*]] = memref.load %a[%[[C15]]]
// CHECK-NEXT:    %[[U0:.*]] = ptx.min3 NaN %[[T0]], %[[X8]], %[[X9]] : f32
// CHECK-NEXT:    %[[U1:.*]] = ptx.min3 NaN %[[T1]], %[[X10]], %[[X11]] : f32
// CHECK-NEXT:    %[[U2:.*]] = ptx.min3 NaN %[[T2]], %[[X12]], %[[X13]] : f32
// CHECK-NEXT:    %[[U3:.*]] = ptx.min3 NaN %[[T3]], %[[X14]], %[[X15]] : f32
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[X16:.*]] = memref.load %a[%[[C16]]]
// CHECK-NEXT:    %[[V0:.*]] = ptx.min NaN f32 %[[U0]], %[[X16]] : f32
// CHECK-NEXT:    %[[R1:.*]] = ptx.min NaN f32 %[[V0]], %[[U1]] : f32
// CHECK-NEXT:    %[[R2:.*]] = ptx.min3 NaN %[[R1]], %[[U2]], %[[U3]] : f32
// CHECK-NEXT:    memref.store %[[R2]], %b[%[[C0]]]
func.func @min17(%a: memref<17xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<17xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 33: 4 pairs, three further chunks (12 min3), the remainder i = 32, the tree.
// CHECK-LABEL: func.func @min33
// CHECK-COUNT-4:  ptx.min NaN f32
// CHECK-NOT:      ptx.min NaN f32
// CHECK-COUNT-12: ptx.min3 NaN
// CHECK-NOT:      ptx.min3 NaN
// CHECK:          ptx.min NaN f32
// CHECK-NEXT:     ptx.min NaN f32
// CHECK-NEXT:     %[[R:.*]] = ptx.min3 NaN
// CHECK-NEXT:     memref.store %[[R]], %b[
func.func @min33(%a: memref<33xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<33xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// max, n = 100: 11 further chunks: 2 iterations of 4 carrying t[0..3] (16 max3 each), then
// 3 chunks unrolled, the remainder i = 96..99, the tree.
// CHECK-LABEL: func.func @max100
// CHECK-COUNT-4:  ptx.max NaN f32
// CHECK:          %[[T0:[^,]*]], {{.*}} = scf.for {{.*}} -> (f32, f32, f32, f32) {
// CHECK-COUNT-16:   ptx.max3 NaN
// CHECK-NOT:        ptx.max
// CHECK:            scf.yield
// CHECK-NEXT:     }
// CHECK-COUNT-8:  memref.load %a
// CHECK-NEXT:     ptx.max3 NaN %[[T0]],
// CHECK-COUNT-11: ptx.max3 NaN
// CHECK-NOT:      ptx.max3 NaN
// CHECK-COUNT-4:  ptx.max NaN f32
// CHECK-NEXT:     %[[R1:.*]] = ptx.max NaN f32
// CHECK-NEXT:     %[[R2:.*]] = ptx.max3 NaN %[[R1]]
// CHECK-NEXT:     memref.store %[[R2]], %b[
func.func @max100(%a: memref<100xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread %a, %b : memref<100xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 8, ignore_nan: the same order with the plain (NaN-ignoring) forms, as TIRx emits.
// CHECK-LABEL: func.func @min8_ignore_nan
// CHECK-COUNT-5:  ptx.min f32
// CHECK-NEXT:     %[[R:.*]] = ptx.min3 %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT:      NaN
// CHECK:          func.return
func.func @min8_ignore_nan(%a: memref<8xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread ignore_nan %a, %b : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
