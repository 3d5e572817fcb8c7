"""Adapters: real sampling rules and matmuls as subjects, each with the contract it truly
has. Serve one set with `python -m samplecheck_subject.run samplecheck_subject.adapters.MODULE:subjects`:

  torch_samplers       SGLang v0.5.19 multinomial, v0.5.20 Gumbel-max, SGLang's and vLLM's filtered paths
  flashinfer_samplers  FlashInfer 0.7.2 flashinfer.sampling
  flashinfer_cake      FlashInfer 0.7.2.post1's cake sampler (flashinfer.cake_sampling), each call's route reported
  torch_matmul         torch.mm and F.linear in bf16
  sglang_shipped       SGLang 0.5.10.post1's own sampling functions, from its extracted wheel
  jax_categorical      jax.random.categorical from the installed jax wheel (threefry, rbg, unsafe_rbg, mode "high")

torch, FlashInfer and jax import lazily (at the first call), and a machine without them or
without their device says so in its hello: samplecheck then skips, never passes.
"""
