"""minitron: a miniature Megatron-style LLM training framework.

minitron reproduces, at toy scale and on CPU, the moving parts of a real
Megatron-LM training stack: argument parsing with Megatron's flag names and
constraints, tensor/pipeline/data/context/expert parallelism over
``torch.distributed`` (gloo), a GPT model with grouped-query attention and
mixture-of-experts, Adam with a sharded distributed optimizer, checkpoint
save/resume and a training loop that writes golden-value loss logs.  It is the
demo workload FastCI measures its test selection and workload shrinking on.
"""

__version__ = "0.3.0"
