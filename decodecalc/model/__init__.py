"""What is deployed, before any batch or context: number formats, hardware, tensor groups
and precision, layer kinds (attention, MLA, DeepSeek-V4's compressed attention, linear
attention, Mamba, MoE) and the model as a stack of them."""
