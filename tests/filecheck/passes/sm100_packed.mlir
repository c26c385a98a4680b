// sm100_packed on sm_100a: the exact sequence of docs/lowering.md ("sm100_packed")
// for sum, max and min, with and without accum, at the chunk and remainder boundaries.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_100a}' | filecheck %s

// n = 17: one further chunk (base 8), remainder i = 16 into acc[0], the tree.
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
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[X16:.*]] = memref.load %a[%[[C16]]]
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

// n = 9: remainder i = 8 only.
// CHECK-LABEL: func.func @sum9
// CHECK-COUNT-9: memref.load %a
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         ptx.add rn f32
// CHECK-NOT:     ptx.add rn f32
// CHECK-COUNT-3: ptx.add.f32x2 rn ftz
// CHECK-NOT:     ptx.add.f32x2
// CHECK:         %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:    memref.store %[[R]], %b[
func.func @sum9(%a: memref<9xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<9xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 13: remainder i = 8..12 (five scalar adds), then the tree.
// CHECK-LABEL: func.func @sum13
// CHECK-COUNT-13: memref.load %a
// CHECK-NOT:     ptx.add.f32x2
// CHECK-COUNT-5: ptx.add rn f32
// CHECK-NOT:     ptx.add rn f32
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

// n = 32: three further chunks (12 packed adds) and the tree (3).
// CHECK-LABEL: func.func @sum32
// CHECK-COUNT-32: memref.load %a
// CHECK-NOT:      ptx.add rn f32
// CHECK-COUNT-15: ptx.add.f32x2 rn ftz
// CHECK-NOT:      ptx.add.f32x2
// CHECK:          %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:     memref.store %[[R]], %b[
func.func @sum32(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// n = 33: three further chunks, remainder i = 32, the tree.
// CHECK-LABEL: func.func @sum33
// CHECK-COUNT-33: memref.load %a
// CHECK-NOT:      ptx.add rn f32
// CHECK-COUNT-12: ptx.add.f32x2 rn ftz
// CHECK-NOT:      ptx.add.f32x2
// CHECK:          ptx.add rn f32
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

// accum: the old dst[0] is loaded after src and added last, as the first operand.
// CHECK-LABEL: func.func @sum16_accum
// CHECK-COUNT-16: memref.load %a
// CHECK-NEXT:     %[[OLD:.*]] = memref.load %b[%[[C0:.*]]] : memref<1xf32, #bulkred.scope<local>>
// CHECK-COUNT-7:  ptx.add.f32x2 rn ftz
// CHECK:          %[[R:.*]] = ptx.add rn f32
// CHECK-NEXT:     %[[RA:.*]] = ptx.add rn f32 %[[OLD]], %[[R]] : f32
// CHECK-NEXT:     memref.store %[[RA]], %b[%[[C0]]]
func.func @sum16_accum(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread accum %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// max, n = 13, accum: one chunk of 8 from index 4, remainder i = 12 into acc[0].
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
// CHECK-NEXT:    %[[OLD:.*]] = memref.load %b[%[[C0]]]
// CHECK-NEXT:    %[[M0:.*]] = ptx.max3 %[[X0]], %[[X4]], %[[X8]] : f32
// CHECK-NEXT:    %[[M1:.*]] = ptx.max3 %[[X1]], %[[X5]], %[[X9]] : f32
// CHECK-NEXT:    %[[M2:.*]] = ptx.max3 %[[X2]], %[[X6]], %[[X10]] : f32
// CHECK-NEXT:    %[[M3:.*]] = ptx.max3 %[[X3]], %[[X7]], %[[X11]] : f32
// CHECK-NEXT:    %[[N0:.*]] = ptx.max f32 %[[M0]], %[[X12]] : f32
// CHECK-NEXT:    %[[R1:.*]] = ptx.max3 %[[N0]], %[[M1]], %[[M2]] : f32
// CHECK-NEXT:    %[[R2:.*]] = ptx.max f32 %[[R1]], %[[M3]] : f32
// CHECK-NEXT:    %[[R3:.*]] = ptx.max f32 %[[OLD]], %[[R2]] : f32
// CHECK-NEXT:    memref.store %[[R3]], %b[%[[C0]]]
// CHECK-NEXT:    func.return
func.func @max13_accum(%a: memref<13xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread accum %a, %b : memref<13xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 8: no chunk of 8 fits after the first 4; four scalar mins, then the tree.
// CHECK-LABEL: func.func @min8
// CHECK:         %[[X0:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 1
// CHECK-NEXT:    %[[X1:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 2
// CHECK-NEXT:    %[[X2:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 3
// CHECK-NEXT:    %[[X3:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 4
// CHECK-NEXT:    %[[X4:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 5
// CHECK-NEXT:    %[[X5:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 6
// CHECK-NEXT:    %[[X6:.*]] = memref.load %a[
// CHECK-NEXT:    arith.constant 7
// CHECK-NEXT:    %[[X7:.*]] = memref.load %a[
// CHECK-NEXT:    %[[N0:.*]] = ptx.min f32 %[[X0]], %[[X4]] : f32
// CHECK-NEXT:    %[[N1:.*]] = ptx.min f32 %[[X1]], %[[X5]] : f32
// CHECK-NEXT:    %[[N2:.*]] = ptx.min f32 %[[X2]], %[[X6]] : f32
// CHECK-NEXT:    %[[N3:.*]] = ptx.min f32 %[[X3]], %[[X7]] : f32
// CHECK-NEXT:    %[[R1:.*]] = ptx.min3 %[[N0]], %[[N1]], %[[N2]] : f32
// CHECK-NEXT:    %[[R2:.*]] = ptx.min f32 %[[R1]], %[[N3]] : f32
// CHECK-NEXT:    memref.store %[[R2]], %b[
func.func @min8(%a: memref<8xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// min, n = 33: three chunks of 8 (12 min3), remainder i = 28..32 (5 scalar), tree.
// CHECK-LABEL: func.func @min33
// CHECK-COUNT-33: memref.load %a
// CHECK-NOT:      ptx.min f32
// CHECK-COUNT-12: ptx.min3
// CHECK-NOT:      ptx.min3
// CHECK-COUNT-5:  ptx.min f32
// CHECK-NEXT:     ptx.min3
// CHECK-NEXT:     %[[R:.*]] = ptx.min f32
// CHECK-NEXT:     memref.store %[[R]], %b[
func.func @min33(%a: memref<33xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<33xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
