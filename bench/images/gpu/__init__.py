"""The GPU measurements of the images pipeline (``dask-tkg bench gpu``, started on the GPU
machine by ``bench/gpu.sh``): :mod:`bench.images.gpu.command` parses and checks, then
:mod:`bench.images.gpu.sections` measures, section by section, into one :class:`bench.images.gpu.record.Run`."""
