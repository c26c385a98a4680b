// lower-to-ptx of bool (i1) buffers: one byte per element holding 0 or 1, as numpy and
// torch store it and as the grid lowerings move it (grid_bool.mlir). A load is ld.u8
// into a 32-bit register and setp.ne.b32 against 0 (any non-zero byte is true); a
// store is selp.b32 of 1 or 0 (a constant: the byte itself) and st.b8.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// The fuzz find of issue 22: a constant stored to a global bool buffer.
// CHECK-LABEL: func.func @store_true
// CHECK-SAME:  (%A: !ptx.ptr<global>)
// CHECK-NEXT:  %[[ONE:.*]] = ptx.mov.imm 1 : i32
// CHECK-NEXT:  ptx.st b8 %A, %[[ONE]] : !ptx.ptr<global>, i32
// CHECK-NEXT:  ptx.ret
// PTX-LABEL:   .visible .entry store_true(
// PTX:         mov.u32 %r1, 1;
// PTX-NEXT:    st.global.b8 [%rd2], %r1;
// PTX:         // assembled by ptxas
func.func @store_true(%A: memref<4xi1, #bulkred.scope<global>>) {
  %c0 = arith.constant 0 : index
  %t = arith.constant true
  memref.store %t, %A[%c0] : memref<4xi1, #bulkred.scope<global>>
  func.return
}

// -----

// A loaded bool stored elsewhere (element 3: byte offset 3), and false stored as 0.
// CHECK-LABEL: func.func @copy_bool
// CHECK:       %[[P:.*]] = ptx.add.ptr %A, %i : !ptx.ptr<global>, i64
// CHECK-NEXT:  %[[BYTE:.*]] = ptx.ld u8 %[[P]] : !ptx.ptr<global> -> i32
// CHECK-NEXT:  %[[ZERO:.*]] = ptx.mov.imm 0 : i32
// CHECK-NEXT:  %[[X:.*]] = ptx.setp ne b32 %[[BYTE]], %[[ZERO]] : i32, i32
// CHECK-NEXT:  %[[C1:.*]] = ptx.mov.imm 1 : i32
// CHECK-NEXT:  %[[C0:.*]] = ptx.mov.imm 0 : i32
// CHECK-NEXT:  %[[V:.*]] = ptx.selp b32 %[[C1]], %[[C0]], %[[X]] : i32, i32 -> i32
// CHECK-NEXT:  ptx.st b8 %B offset 3, %[[V]] : !ptx.ptr<global>, i32
// CHECK-NEXT:  %[[F:.*]] = ptx.mov.imm 0 : i32
// CHECK-NEXT:  ptx.st b8 %B, %[[F]] : !ptx.ptr<global>, i32
// PTX-LABEL:   .visible .entry copy_bool(
// PTX:         ld.global.u8 %r1, [%rd6];
// PTX-NEXT:    mov.u32 %r2, 0;
// PTX-NEXT:    setp.ne.b32 %p1, %r1, %r2;
// PTX:         selp.b32 %r5, %r3, %r4, %p1;
// PTX-NEXT:    st.global.b8 [%rd4+3], %r5;
// PTX:         st.global.b8 [%rd4], %r6;
// PTX:         // assembled by ptxas
func.func @copy_bool(%A: memref<4xi1, #bulkred.scope<global>>, %B: memref<4xi1, #bulkred.scope<global>>, %i: index) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %f = arith.constant false
  %x = memref.load %A[%i] : memref<4xi1, #bulkred.scope<global>>
  memref.store %x, %B[%c3] : memref<4xi1, #bulkred.scope<global>>
  memref.store %f, %B[%c0] : memref<4xi1, #bulkred.scope<global>>
  func.return
}

// -----

// A bool loaded through a view (row 1 of a 4x16 buffer: byte 16 + 16 + 2) as a branch
// condition, and a comparison stored as a bool.
// CHECK-LABEL: func.func @view_and_branch
// CHECK:       ptx.ld u8 %A offset 34 : !ptx.ptr<global> -> i32
// CHECK:       ptx.setp ne b32
// CHECK:       ptx.bra
// CHECK:       %[[CMP:.*]] = ptx.setp lt s64 %i, %j : i64, i64
// CHECK:       ptx.selp b32 {{%.*}}, {{%.*}}, %[[CMP]] : i32, i32 -> i32
// CHECK-NEXT:  ptx.st b8 %A offset 5
// PTX-LABEL:   .visible .entry view_and_branch(
// PTX:         ld.global.u8 %r{{[0-9]+}}, [%rd{{[0-9]+}}+34];
// PTX:         // assembled by ptxas
func.func @view_and_branch(%A: memref<4x16xi1, #bulkred.scope<global>>, %i: index, %j: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %v = memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xi1, #bulkred.scope<global>> to memref<2x16xi1, strided<[16, 1], offset: 16>, #bulkred.scope<global>>
  %x = memref.load %v[%c1, %c2] : memref<2x16xi1, strided<[16, 1], offset: 16>, #bulkred.scope<global>>
  scf.if %x {
    %lt = arith.cmpi slt, %i, %j : index
    memref.store %lt, %A[%c0, %c5] : memref<4x16xi1, #bulkred.scope<global>>
  }
  func.return
}
