"""A PyTorch program with a custom kernel from the workspace (inline_scale.cu), built with
load_inline, for tests/gpu/profile_suite.sh."""
import pathlib
import torch
from torch.utils.cpp_extension import load_inline

source = (pathlib.Path(__file__).parent / "inline_scale.cu").read_text()
module = load_inline(
    name="cutune_inline_scale",
    cpp_sources="torch::Tensor scale_rows_op(torch::Tensor in, torch::Tensor weight);",
    cuda_sources=source,
    functions=["scale_rows_op"],
)
x = torch.randn(4096, 2048, device="cuda")
w = torch.randn(2048, device="cuda")
for _ in range(20):
    y = module.scale_rows_op(x, w)
    z = torch.softmax(y, dim=1)
torch.cuda.synchronize()
print("inline_scale:", float(z.sum()))
