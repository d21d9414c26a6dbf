"""The pointwise generator's builder and source, for the layers above that build programs.

genesis_autograd may not import genesis_kernels (pyproject's import contracts); its compiler
(genesis_autograd.compile) builds the programs that ``NDArray.fused_pointwise`` runs through this module.
"""

from genesis_kernels.codegen import Program, ProgramBuilder, generated_source

__all__ = ["Program", "ProgramBuilder", "generated_source"]
