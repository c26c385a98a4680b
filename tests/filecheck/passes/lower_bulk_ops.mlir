// lower-bulk-ops: the tile-level bulk ops into ptx bulk instructions with their
// mbarrier, fences and CTA barriers (docs/lowering.md, "Bulk operations").
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops | filecheck %s
// The output is level-2 IR that parses back, with no tile-level bulk op left.
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops | bulkred-opt --split-input-file | filecheck %s --check-prefix=NOLEFT
// NOLEFT-NOT: bulkred.bulk
// Every created op carries the location of the tile op it replaces.
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops --print-debuginfo | filecheck %s --check-prefix=LOC
// The whole pipeline, printed and assembled by ptxas for sm_90a and sm_100a.
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,PTX90
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// global -> shared: init by the elected thread, fences, barrier, expect_tx + the copy
// (shared::cluster form, the CTA's own address), every thread waits, barrier, inval.
// CHECK-LABEL: func.func @global_to_shared
// CHECK:      %tid_x = ptx.mov.sreg tid.x : i32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %elected = arith.cmpi eq, %tid_x, %[[Z]] : i32
// CHECK-NEXT: %[[M:.*]] = builtin.unrealized_conversion_cast %mbar : memref<1xi64, #bulkred.scope<shared>> to !ptx.ptr<shared::cta>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: scf.if %elected {
// CHECK-NEXT:   ptx.mbarrier.init %[[M]], %[[ONE]] : !ptx.ptr<shared::cta>
// CHECK-NEXT:   ptx.fence.mbarrier_init.release.cluster
// CHECK-NEXT: }
// CHECK-NEXT: ptx.fence.proxy.async{{$}}
// CHECK-NEXT: ptx.bar.sync 0
// CHECK-NEXT: %bytes = arith.constant 4096 : i32
// CHECK-NEXT: %[[D:.*]] = builtin.unrealized_conversion_cast %tile : memref<1024xf32, #bulkred.scope<shared>> to !ptx.ptr<shared::cluster>
// CHECK-NEXT: %[[S:.*]] = builtin.unrealized_conversion_cast %A : memref<1024xf32, #bulkred.scope<global>> to !ptx.ptr<global>
// CHECK-NEXT: %[[MC:.*]] = builtin.unrealized_conversion_cast %mbar : memref<1xi64, #bulkred.scope<shared>> to !ptx.ptr<shared::cluster>
// CHECK-NEXT: scf.if %elected {
// CHECK-NEXT:   ptx.mbarrier.arrive.expect_tx %[[M]], %bytes : !ptx.ptr<shared::cta>{{$}}
// CHECK-NEXT:   ptx.cp.async.bulk.shared_cluster.global %[[D]], %[[S]], %bytes, %[[MC]]{{$}}
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[T:.*]] = arith.constant true
// CHECK-NEXT: scf.while () : () -> () {
// CHECK-NEXT:   %done = ptx.mbarrier.try_wait.parity %[[M]], %[[P]] : !ptx.ptr<shared::cta>
// CHECK-NEXT:   %[[AGAIN:.*]] = arith.xori %done, %[[T]] : i1
// CHECK-NEXT:   scf.condition(%[[AGAIN]])
// CHECK-NEXT: } do {
// CHECK-NEXT:   scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: ptx.bar.sync 0
// CHECK-NEXT: scf.if %elected {
// CHECK-NEXT:   ptx.mbarrier.inval %[[M]] : !ptx.ptr<shared::cta>
// CHECK-NEXT: }
// CHECK-NEXT: func.return

// LOC-LABEL: func.func @global_to_shared
// LOC-COUNT-3: loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 26]]:3)
// LOC:         ptx.mbarrier.init {{.*}} loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 25]]:3)
// LOC:         } loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 24]]:3)
// LOC:         ptx.cp.async.bulk.shared_cluster.global {{.*}} loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 23]]:3)
// LOC:         ptx.mbarrier.try_wait.parity {{.*}} loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 22]]:3)
// LOC:         scf.condition({{.*}}) loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 21]]:3)
// LOC:         ptx.mbarrier.inval {{.*}} loc("{{.*}}lower_bulk_ops.mlir":[[# @LINE + 20]]:3)
// LOC-NOT:     loc(unknown)
// LOC:         func.return

// Every instruction of the sequences needs PTX ISA 8.0 at most.
// PTX90:     .version 8.0
// PTX-LABEL: .visible .entry global_to_shared(
// PTX:       mbarrier.init.shared::cta.b64 [%r[[MB:[0-9]+]]], %r{{[0-9]+}};
// PTX-NEXT:  fence.mbarrier_init.release.cluster;
// PTX:       fence.proxy.async;
// PTX-NEXT:  bar.sync 0;
// PTX:       mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r[[MB]]], %r{{[0-9]+}};
// PTX-NEXT:  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%r{{[0-9]+}}];
// PTX:       mbarrier.try_wait.parity.shared::cta.b64 %p{{[0-9]+}}, [%r[[MB]]], %r{{[0-9]+}};
// PTX:       bar.sync 0;
// PTX:       mbarrier.inval.shared::cta.b64 [%r[[MB]]];
// PTX:       assembled by ptxas (nvJitLink) for sm_{{90a|100a}}
func.func @global_to_shared(%A: memref<1024xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [128], cluster = [1]>} {
  %tile = memref.alloca() : memref<1024xf32, #bulkred.scope<shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %A, %tile, %mbar : memref<1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// shared -> global: every thread fences and meets at the barrier; the elected thread
// copies and waits for the bulk group (writes complete, not only reads); barrier.
// CHECK-LABEL: func.func @shared_to_global
// CHECK:      %elected = arith.cmpi eq, %tid_x, %{{.*}} : i32
// CHECK-NEXT: ptx.fence.proxy.async{{$}}
// CHECK-NEXT: ptx.bar.sync 0
// CHECK-NEXT: %bytes = arith.constant 1088 : i32
// CHECK-NEXT: %[[D:.*]] = builtin.unrealized_conversion_cast %B : memref<4x68xf32, #bulkred.scope<global>> to !ptx.ptr<global>
// CHECK-NEXT: %[[S:.*]] = builtin.unrealized_conversion_cast %tile : memref<4x68xf32, #bulkred.scope<shared>> to !ptx.ptr<shared::cta>
// CHECK-NEXT: scf.if %elected {
// CHECK-NEXT:   ptx.cp.async.bulk.global.shared_cta %[[D]], %[[S]], %bytes{{$}}
// CHECK-NEXT:   ptx.cp.async.bulk.commit_group
// CHECK-NEXT:   ptx.cp.async.bulk.wait_group 0
// CHECK-NEXT: }
// CHECK-NEXT: ptx.bar.sync 0
// CHECK-NEXT: func.return

// PTX-LABEL: .visible .entry shared_to_global(
// PTX:       fence.proxy.async;
// PTX-NEXT:  bar.sync 0;
// PTX:       cp.async.bulk.global.shared::cta.bulk_group [%rd{{[0-9]+}}], [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX-NEXT:  cp.async.bulk.commit_group;
// PTX-NEXT:  cp.async.bulk.wait_group 0;
// PTX:       bar.sync 0;
// PTX-NEXT:  ret;
func.func @shared_to_global(%B: memref<4x68xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [64], cluster = [1]>} {
  %tile = memref.alloca() : memref<4x68xf32, #bulkred.scope<shared>>
  bulkred.bulk_copy %tile, %B : memref<4x68xf32, #bulkred.scope<shared>>, memref<4x68xf32, #bulkred.scope<global>>
  func.return
}

// -----

// bulk_reduce into global: .redOp and .type from the kind and the element type
// (integers signed, 64-bit add .u64, bitwise .b, f16/bf16 add .noftz).
// CHECK-LABEL: func.func @reduce_forms
// CHECK:      ptx.fence.proxy.async{{$}}
// CHECK-NEXT: ptx.bar.sync 0
// CHECK:      scf.if %elected {
// CHECK-NEXT:   ptx.cp.reduce.async.bulk.global.shared_cta add f32 %{{.*}}, %{{.*}}, %bytes{{$}}
// CHECK-NEXT:   ptx.cp.async.bulk.commit_group
// CHECK-NEXT:   ptx.cp.async.bulk.wait_group 0
// CHECK-NEXT: }
// CHECK-NEXT: ptx.bar.sync 0
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta add noftz f16
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta max bf16
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta add s32
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta min s32
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta xor b32
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta add u64
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta max s64
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta or b64
// CHECK:      ptx.cp.reduce.async.bulk.global.shared_cta add f64

// PTX-LABEL: .visible .entry reduce_forms(
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd{{[0-9]+}}], [%r{{[0-9]+}}], %r{{[0-9]+}};
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.f16
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.max.bf16
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.s32
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.min.s32
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.xor.b32
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u64
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.max.s64
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.or.b64
// PTX:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f64
func.func @reduce_forms(%f32: memref<64xf32, #bulkred.scope<global>>, %f16: memref<64xf16, #bulkred.scope<global>>,
                        %bf16: memref<64xbf16, #bulkred.scope<global>>, %i32: memref<64xi32, #bulkred.scope<global>>,
                        %i64: memref<64xi64, #bulkred.scope<global>>, %f64: memref<64xf64, #bulkred.scope<global>>)
    attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [128], cluster = [1]>} {
  %sf32 = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %sf16 = memref.alloca() : memref<64xf16, #bulkred.scope<shared>>
  %sbf16 = memref.alloca() : memref<64xbf16, #bulkred.scope<shared>>
  %si32 = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %si64 = memref.alloca() : memref<64xi64, #bulkred.scope<shared>>
  %sf64 = memref.alloca() : memref<64xf64, #bulkred.scope<shared>>
  bulkred.bulk_reduce sum %sf32, %f32 : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %sf16, %f16 : memref<64xf16, #bulkred.scope<shared>>, memref<64xf16, #bulkred.scope<global>>
  bulkred.bulk_reduce max %sbf16, %bf16 : memref<64xbf16, #bulkred.scope<shared>>, memref<64xbf16, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %si32, %i32 : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  bulkred.bulk_reduce min %si32, %i32 : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  bulkred.bulk_reduce xor %si32, %i32 : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %si64, %i64 : memref<64xi64, #bulkred.scope<shared>>, memref<64xi64, #bulkred.scope<global>>
  bulkred.bulk_reduce max %si64, %i64 : memref<64xi64, #bulkred.scope<shared>>, memref<64xi64, #bulkred.scope<global>>
  bulkred.bulk_reduce or %si64, %i64 : memref<64xi64, #bulkred.scope<shared>>, memref<64xi64, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %sf64, %f64 : memref<64xf64, #bulkred.scope<shared>>, memref<64xf64, #bulkred.scope<global>>
  func.return
}

// -----

// The elected thread: only the block dimensions larger than 1 are read (the printer's
// .reqntid holds the launch to that block).
// CHECK-LABEL: func.func @block_3d
// CHECK:      %tid_x = ptx.mov.sreg tid.x : i32
// CHECK-NEXT: %tid_y = ptx.mov.sreg tid.y : i32
// CHECK-NEXT: %tid_z = ptx.mov.sreg tid.z : i32
// CHECK-NEXT: %[[XY:.*]] = ptx.or b32 %tid_x, %tid_y : i32, i32
// CHECK-NEXT: %[[XYZ:.*]] = ptx.or b32 %[[XY]], %tid_z : i32, i32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %elected = arith.cmpi eq, %[[XYZ]], %[[Z]] : i32

// PTX-LABEL: .visible .entry block_3d(
// PTX:       .reqntid 32, 2, 2
// PTX:       mov.u32 %r{{[0-9]+}}, %tid.x;
// PTX-NEXT:  mov.u32 %r{{[0-9]+}}, %tid.y;
// PTX-NEXT:  mov.u32 %r{{[0-9]+}}, %tid.z;
func.func @block_3d(%B: memref<64xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32, 2, 2], cluster = [1]>} {
  %tile = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  bulkred.bulk_reduce and %tile, %B : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK-LABEL: func.func @block_y_only
// CHECK:      %tid_y = ptx.mov.sreg tid.y : i32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %elected = arith.cmpi eq, %tid_y, %[[Z]] : i32
func.func @block_y_only(%B: memref<64xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1, 64], cluster = [1]>} {
  %tile = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  bulkred.bulk_copy %tile, %B : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Without bulkred.launch every dimension is read.
// CHECK-LABEL: func.func @no_launch
// CHECK:      %tid_x = ptx.mov.sreg tid.x : i32
// CHECK-NEXT: %tid_y = ptx.mov.sreg tid.y : i32
// CHECK-NEXT: %tid_z = ptx.mov.sreg tid.z : i32
func.func @no_launch(%B: memref<64xi32, #bulkred.scope<global>>) {
  %tile = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  bulkred.bulk_copy %tile, %B : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Bulk ops inside a loop, on one mbarrier: each round initializes and invalidates it.
// CHECK-LABEL: func.func @in_a_loop
// CHECK:      scf.for
// CHECK:        ptx.mbarrier.init
// CHECK:        ptx.cp.async.bulk.shared_cluster.global
// CHECK:        scf.while
// CHECK:        ptx.mbarrier.inval
// CHECK:        ptx.cp.async.bulk.global.shared_cta
// CHECK:        ptx.cp.async.bulk.wait_group 0
// CHECK:        ptx.bar.sync 0
// CHECK-NEXT: }
// CHECK-NEXT: func.return

// PTX-LABEL: .visible .entry in_a_loop(
// PTX:       mbarrier.init.shared::cta.b64
// PTX:       mbarrier.try_wait.parity.shared::cta.b64
// PTX:       mbarrier.inval.shared::cta.b64
// PTX:       cp.async.bulk.wait_group 0;
func.func @in_a_loop(%A: memref<256xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [128], cluster = [1]>} {
  %tile = memref.alloca() : memref<256xf32, #bulkred.scope<shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %k = %c0 to %c3 step %c1 {
    bulkred.bulk_copy %A, %tile, %mbar : memref<256xf32, #bulkred.scope<global>>, memref<256xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
    bulkred.bulk_copy %tile, %A : memref<256xf32, #bulkred.scope<shared>>, memref<256xf32, #bulkred.scope<global>>
  }
  func.return
}

// -----

// A bulk op in a kernel of several blocks, with a tile and its mbarrier that fill the
// static shared memory of sm_90a and sm_100a (232432 + 8 of 232448 bytes).
// CHECK-LABEL: func.func @multi_block
// CHECK:      ^bb1:
// CHECK:        ptx.cp.async.bulk.shared_cluster.global
// CHECK:        cf.br ^bb2

// PTX-LABEL: .visible .entry multi_block(
// PTX:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX:       // assembled by ptxas
func.func @multi_block(%g: memref<58108xf32, #bulkred.scope<global>>, %n: i32) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32]>} {
  %s = memref.alloca() : memref<58108xf32, #bulkred.scope<shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %z = arith.constant 0 : i32
  %p = arith.cmpi eq, %n, %z : i32
  cf.cond_br %p, ^bb1, ^bb2
^bb1:
  bulkred.bulk_copy %g, %s, %m : memref<58108xf32, #bulkred.scope<global>>, memref<58108xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  cf.br ^bb2
^bb2:
  func.return
}
