"""Deployment files and vLLM serve configs held to latency, throughput and memory
targets: the core of `decodecalc check`.
"""
