"""The GPU measurements of the images pipeline (``dask-tkg bench gpu``, started on the GPU
machine by ``bench/gpu.sh``): :mod:`bench.gpu.command` parses and checks, then
:mod:`bench.gpu.sections` measures, section by section, into one :class:`bench.gpu.record.Run`."""
