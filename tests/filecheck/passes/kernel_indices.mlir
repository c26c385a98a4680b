// lower-to-ptx of kernel indices, index arithmetic, loops with dynamic bounds and tile
// views (memref.subview), printed as PTX and assembled by ptxas for sm_90a.
// RUN: bulkred-opt %s --split-input-file -p 'lower-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s
// The level-3 IR has no gpu, bulkred, memref or arith op left.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx | filecheck %s --check-prefix=NOLEFT
// NOLEFT-NOT: gpu.
// NOLEFT-NOT: bulkred.cluster
// NOLEFT-NOT: memref.
// NOLEFT-NOT: arith.

// Special registers are read as u32 and widened to the 64-bit index type. The block
// extents are constants (.reqntid holds every launch to them), and so is %tid.y when
// the block has one row.
// CHECK-LABEL: .visible .entry ids(
// CHECK:      mov.u32 %r1, %tid.x;
// CHECK-NEXT: cvt.u64.u32 %rd[[TID:[0-9]+]], %r1;
// CHECK-NEXT: mov.u32 %r2, %ctaid.y;
// CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r2;
// CHECK-NEXT: mov.u64 %rd{{[0-9]+}}, 64;
// CHECK-NEXT: mov.u32 %r3, %nctaid.z;
// CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r3;
// CHECK-NEXT: mov.u32 %r4, %laneid;
// CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r4;
// CHECK-NEXT: mov.u32 %r5, %cluster_ctarank;
// CHECK-NEXT: cvt.u64.u32 %rd{{[0-9]+}}, %r5;
// CHECK-NEXT: mov.u64 %rd{{[0-9]+}}, 2;
// CHECK-NEXT: mov.u64 %rd{{[0-9]+}}, 0;
// CHECK:      ret;
func.func @ids(%out: memref<8xi64, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [2, 2, 2], block = [64], cluster = [2]>} {
  %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %cta = "gpu.block_id"() <{dimension = #gpu<dim y>}> : () -> index
  %ntid = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
  %nctaid = "gpu.grid_dim"() <{dimension = #gpu<dim z>}> : () -> index
  %lane = "gpu.lane_id"() : () -> index
  %rank = bulkred.cluster_rank
  %n = bulkred.cluster_size
  %tidy = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %v0 = arith.index_cast %tid : index to i64
  %v1 = arith.index_cast %cta : index to i64
  %v2 = arith.index_cast %ntid : index to i64
  %v3 = arith.index_cast %nctaid : index to i64
  %v4 = arith.index_cast %lane : index to i64
  %v5 = arith.index_cast %rank : index to i64
  %v6 = arith.index_cast %n : index to i64
  %v7 = arith.index_cast %tidy : index to i64
  memref.store %v0, %out[%c0] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v1, %out[%c1] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v2, %out[%c2] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v3, %out[%c3] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v4, %out[%c4] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v5, %out[%c5] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v6, %out[%c6] : memref<8xi64, #bulkred.scope<global>>
  memref.store %v7, %out[%c7] : memref<8xi64, #bulkred.scope<global>>
  func.return
}

// -----

// Without a bulkred.launch nothing is known: every extent is read.
// CHECK-LABEL: .visible .entry no_launch(
// CHECK: mov.u32 %r1, %ntid.x;
// CHECK: mov.u32 %r2, %cluster_nctarank;
func.func @no_launch(%out: memref<2xi64, #bulkred.scope<global>>) {
  %ntid = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
  %n = bulkred.cluster_size
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v0 = arith.index_cast %ntid : index to i64
  %v1 = arith.index_cast %n : index to i64
  memref.store %v0, %out[%c0] : memref<2xi64, #bulkred.scope<global>>
  memref.store %v1, %out[%c1] : memref<2xi64, #bulkred.scope<global>>
  func.return
}

// -----

// Index division, remainder, min and max in the operation's signedness; constant
// operands fold (7 / 2 = 3, -7 rem 2 = -1 signed, min(3, -1) unsigned = 3).
// CHECK-LABEL: .visible .entry index_math(
// CHECK:      div.u64 %rd[[Q:[0-9]+]], %rd{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK-NEXT: rem.u64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK-NEXT: div.s64
// CHECK-NEXT: rem.s64
// CHECK-NEXT: min.u64
// CHECK-NEXT: min.s64
// CHECK-NEXT: max.u64
// CHECK-NEXT: max.s64
// CHECK:      mov.u64 %rd{{[0-9]+}}, 3;
// CHECK:      mov.s64 %rd{{[0-9]+}}, -1;
// CHECK:      mov.u64 %rd{{[0-9]+}}, 3;
func.func @index_math(%out: memref<11xi64, #bulkred.scope<global>>, %a: index, %b: index) {
  %q = arith.divui %a, %b : index
  %r = arith.remui %a, %b : index
  %qs = arith.divsi %a, %b : index
  %rs = arith.remsi %a, %b : index
  %m0 = arith.minui %a, %b : index
  %m1 = arith.minsi %a, %b : index
  %m2 = arith.maxui %a, %b : index
  %m3 = arith.maxsi %a, %b : index
  %c7 = arith.constant 7 : index
  %cm7 = arith.constant -7 : index
  %c2 = arith.constant 2 : index
  %f0 = arith.divui %c7, %c2 : index
  %f1 = arith.remsi %cm7, %c2 : index
  %f2 = arith.minui %f0, %f1 : index
  %vals = memref.alloca() : memref<11xi64, #bulkred.scope<local>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %i0 = arith.index_cast %q : index to i64
  %i1 = arith.index_cast %r : index to i64
  %i2 = arith.index_cast %qs : index to i64
  %i3 = arith.index_cast %rs : index to i64
  %i4 = arith.index_cast %m0 : index to i64
  %i5 = arith.index_cast %m1 : index to i64
  %i6 = arith.index_cast %m2 : index to i64
  %i7 = arith.index_cast %m3 : index to i64
  %i8 = arith.index_cast %f0 : index to i64
  %i9 = arith.index_cast %f1 : index to i64
  %i10 = arith.index_cast %f2 : index to i64
  memref.store %i0, %out[%c0] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i1, %out[%c1] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i2, %out[%c2] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i3, %out[%c3] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i4, %out[%c4] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i5, %out[%c5] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i6, %out[%c6] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i7, %out[%c7] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i8, %out[%c8] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i9, %out[%c9] : memref<11xi64, #bulkred.scope<global>>
  memref.store %i10, %out[%c10] : memref<11xi64, #bulkred.scope<global>>
  func.return
}

// -----

// A loop over the tiles of a row, strided by the threads of the CTA: the bounds and
// the step are values; the step (the block extent) is a constant.
// CHECK-LABEL: .visible .entry strided_loop(
// CHECK:      mov.u32 %r1, %tid.x;
// CHECK-NEXT: cvt.u64.u32 %rd[[T:[0-9]+]], %r1;
// CHECK:      mov.u64 %rd[[STEP:[0-9]+]], 128;
// CHECK:      setp.lt.s64 %p1, %rd{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK:      add.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd[[STEP]];
func.func @strided_loop(%A: memref<4096xf32, #bulkred.scope<global>>, %n: index) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [128], cluster = [1]>} {
  %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
  %step = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
  %hi = arith.minui %n, %step : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %t to %n step %step {
    memref.store %zero, %A[%i] : memref<4096xf32, #bulkred.scope<global>>
  }
  func.return
}

// -----

// Views: element [i] of the view at offset o is base + (o + i) * 4; a constant part
// folds into the ld/st offset. A 2-D view keeps its source's row stride (64 floats,
// 256 bytes); a view of a view adds both offsets.
// CHECK-LABEL: .visible .entry views(
// CHECK:      mov.u32 %r1, %ctaid.x;
// CHECK-NEXT: cvt.u64.u32 %rd[[B:[0-9]+]], %r1;
// CHECK-NEXT: mov.u64 %rd[[C1K:[0-9]+]], 1024;
// CHECK-NEXT: mul.lo.s64 %rd[[OFF:[0-9]+]], %rd[[B]], %rd[[C1K]];
// CHECK-NEXT: add.u64 %rd[[TILE:[0-9]+]], %rd{{[0-9]+}}, %rd[[OFF]];
// CHECK-NEXT: ld.global.f32 %f1, [%rd[[TILE]]+12];
// CHECK:      st.global.f32 [%rd{{[0-9]+}}+264], %f1;
// CHECK:      st.global.f32 [%rd{{[0-9]+}}+300], %f1;
func.func @views(%A: memref<1024xf32, #bulkred.scope<global>>, %M: memref<8x64xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [1], cluster = [1]>} {
  %b = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
  %c256 = arith.constant 256 : index
  %o = arith.muli %b, %c256 : index
  %tile = memref.subview %A[%o] [256] [1] : memref<1024xf32, #bulkred.scope<global>> to memref<256xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %c3 = arith.constant 3 : index
  %v = memref.load %tile[%c3] : memref<256xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %rows = memref.subview %M[%b, 0] [2, 64] [1, 1] : memref<8x64xf32, #bulkred.scope<global>> to memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  memref.store %v, %rows[%c1, %c2] : memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  %inner = memref.subview %rows[1, 8] [1, 16] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>> to memref<1x16xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  %c0 = arith.constant 0 : index
  memref.store %v, %inner[%c0, %c3] : memref<1x16xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  func.return
}

// -----

// A view of a shared buffer: a 32-bit address, the 64-bit byte offset narrowed.
// CHECK-LABEL: .visible .entry shared_view(
// CHECK:      mov.u32 %r{{[0-9]+}}, __shared0_s;
// CHECK:      cvt.u32.u64 %r[[OFF:[0-9]+]], %rd{{[0-9]+}};
// CHECK-NEXT: add.u32 %r[[P:[0-9]+]], %r{{[0-9]+}}, %r[[OFF]];
// CHECK:      st.shared::cta.f32 [%r[[P]]+4],
func.func @shared_view(%i: index) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  %s = memref.alloca() : memref<128xf32, #bulkred.scope<shared>>
  %v = memref.subview %s[%i] [32] [1] : memref<128xf32, #bulkred.scope<shared>> to memref<32xf32, strided<[1], offset: ?>, #bulkred.scope<shared>>
  %one = arith.constant 1.0 : f32
  %c1 = arith.constant 1 : index
  memref.store %one, %v[%c1] : memref<32xf32, strided<[1], offset: ?>, #bulkred.scope<shared>>
  func.return
}
