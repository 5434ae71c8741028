#!/usr/bin/env python3
"""write_onnx_node_tests.py - writes ONNX's backend node test cases to disk
in the layout the onnx wheel shipped up to 1.22 (onnx/backend/test/data/node):

    OUT/<test_name>/model.onnx
    OUT/<test_name>/test_data_set_K/input_N.pb, output_N.pb   (TensorProto)

From onnx 1.23 on (onnx PR #7959) the wheel builds these cases in memory
(onnx.backend.test.loader.load_model_tests(kind="node")) and ships no files,
so CMake runs this with the .venv's Python at build time and hands the folder
to tests/unit/test_graph_node_tests.c. Cases whose inputs or outputs are not
plain tensors (sequences, optionals, maps) are written without them: the C
test refuses those models at load anyway.

Usage: write_onnx_node_tests.py OUT_DIR   (OUT_DIR is replaced; OUT_DIR/.stamp
is written last, so an interrupted run is redone)
"""
import os
import shutil
import sys
import warnings


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: write_onnx_node_tests.py OUT_DIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    warnings.simplefilter("ignore")  # the case generators' numpy overflow warnings
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415
    from onnx.backend.test.loader import load_model_tests  # noqa: PLC0415

    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    n_cases = 0
    for case in load_model_tests(kind="node"):
        case_dir = os.path.join(tmp, case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for k, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(case_dir, f"test_data_set_{k}")
            os.makedirs(set_dir)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    if j < len(infos) and not infos[j].type.HasField("tensor_type"):
                        continue
                    if isinstance(value, TensorProto):
                        data = value.SerializeToString()
                    else:
                        name = infos[j].name if j < len(infos) else ""
                        data = numpy_helper.from_array(value, name).SerializeToString()
                    with open(os.path.join(set_dir, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(data)
        n_cases += 1
    with open(os.path.join(tmp, ".stamp"), "w") as f:
        f.write(f"{n_cases} node test cases\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"write_onnx_node_tests: {n_cases} cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
