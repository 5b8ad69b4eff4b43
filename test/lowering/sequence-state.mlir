// RUN: dsf-opt %s --dsf-to-linalg | FileCheck %s

// A continued sequence's state lowers to plain tensors: a window or cache
// after its prior rows is the two stacked (tensor.insert_slice twice), the
// retained window its last size - 1 rows (tensor.extract_slice), a
// compressor's carry goes in front of its input and its new carry is the
// rows of the open group (for overlap, with the complete group before).
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wkv : tensor<16x8xf32>
  dsf.weight @wg : tensor<16x8xf32>
  dsf.weight @ape : tensor<4x16xf32>
  dsf.weight @n : tensor<8xf32>
  // CHECK-LABEL: func.func @step(
  // CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x8xf32>, %[[ROWS:[a-z0-9]+]]: tensor<?x8xf32>, %[[W0:[a-z0-9]+]]: tensor<?x8xf32>, %[[CARRY:[a-z0-9]+]]: tensor<?x8xf32>, %[[C0:[a-z0-9]+]]: tensor<?x8xf32>
  // CHECK-SAME: -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  func.func @step(%x: tensor<?x8xf32>, %rows: tensor<?x8xf32>, %w0: !dsf.window<size = 4, width = 8, #dsf.quant<f32>>,
                  %carry: tensor<?x8xf32>, %c0: !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>)
      -> (!dsf.window<size = 4, width = 8, #dsf.quant<f32>>, tensor<?x8xf32>, !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>) {
    // CHECK: %[[STACKED:.*]] = tensor.insert_slice %[[W0]] into
    // CHECK: %[[WIN:.*]] = tensor.insert_slice %[[ROWS]] into %[[STACKED]]
    %w = dsf.window.write %rows after %w0 : !dsf.window<size = 4, width = 8, #dsf.quant<f32>> : tensor<?x8xf32> -> !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
    // CHECK: arith.minui %{{.*}}, %c3
    // CHECK: %[[KEPT:.*]] = tensor.extract_slice %[[WIN]]
    %kept = dsf.window.retain %w : !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
    // CHECK: tensor.insert_slice %[[CARRY]] into
    // CHECK: %[[INPUT:.*]] = tensor.insert_slice %[[X]] into
    // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
    // CHECK: %[[OPEN:.*]] = tensor.extract_slice %[[INPUT]]
    %lat, %open = dsf.compress %x carry(%carry : tensor<?x8xf32>) {kind = #dsf.compressor<overlap>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
    // CHECK: tensor.insert_slice %[[C0]] into
    // CHECK: %[[CACHE:.*]] = tensor.insert_slice
    %c = dsf.cache.write %lat after %c0 : !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>> : tensor<?x8xf32> -> !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
    // CHECK: return %[[KEPT]], %[[OPEN]], %[[CACHE]]
    return %kept, %open, %c : !dsf.window<size = 4, width = 8, #dsf.quant<f32>>, tensor<?x8xf32>, !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
  }
}
