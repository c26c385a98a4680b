// lower-to-ptx keeps the ptx ops of warp/CTA/grid reductions (shfl.sync, ld.vec, atom,
// red, fence) as they are, and resolves the casts of memrefs that give them addresses.
// RUN: bulkred-opt %s -p lower-to-ptx | filecheck %s
// RUN: bulkred-opt %s -p lower-to-ptx -t ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @grid_sum
// CHECK-SAME: (%{{.*}}: !ptx.ptr<global>, %{{.*}}: !ptx.ptr<global>, %{{.*}}: !ptx.ptr<global>)
// CHECK-NOT: unrealized_conversion_cast
// CHECK: ptx.ld.vec nc f32 %{{.*}} offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
// CHECK: ptx.shfl.sync bfly
// CHECK: ptx.red add f32
// CHECK: ptx.fence acq_rel gpu
// CHECK: ptx.atom add u32
// PTX-LABEL: .visible .entry grid_sum(
// PTX: ld.global.nc.v4.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}+16];
// PTX: shfl.sync.bfly.b32
// PTX: red.global.add.v4.f32 [%rd{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
// PTX: fence.acq_rel.gpu;
// PTX: atom.global.add.u32
func.func @grid_sum(%A: memref<64xf32, #bulkred.scope<global>>, %S: memref<4xf32, #bulkred.scope<global>>, %T: memref<1xi32, #bulkred.scope<global>>) {
  %a = builtin.unrealized_conversion_cast %A : memref<64xf32, #bulkred.scope<global>> to !ptx.ptr<global>
  %s = builtin.unrealized_conversion_cast %S : memref<4xf32, #bulkred.scope<global>> to !ptx.ptr<global>
  %t = builtin.unrealized_conversion_cast %T : memref<1xi32, #bulkred.scope<global>> to !ptx.ptr<global>
  %x:4 = ptx.ld.vec nc f32 %a offset 16 : !ptx.ptr<global> -> f32, f32, f32, f32
  %lane = ptx.mov.imm 1 : i32
  %clamp = ptx.mov.imm 31 : i32
  %all = ptx.mov.imm -1 : i32
  %y = ptx.shfl.sync bfly %x#0, %lane, %clamp, %all : f32
  ptx.red add f32 %s, %y, %x#1, %x#2, %x#3 : !ptx.ptr<global>, f32, f32, f32, f32
  ptx.fence acq_rel gpu
  %one = ptx.mov.imm 1 : i32
  %ticket = ptx.atom add u32 %t, %one : !ptx.ptr<global>, i32
  func.return
}
