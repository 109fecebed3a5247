"""Shared fixtures. GPU tests (``@pytest.mark.gpu``) are skipped, with the reason, where JAX
sees no GPU or DALI is missing; run them on the GPU machine with ``pytest -m gpu``. TPU tests
(``@pytest.mark.tpu``) likewise where JAX sees no TPU: ``pytest -m tpu -p no:xdist``.

The tests are grouped by the room of the package they test (core, runtime, catalog, plugins,
compose, dali, reliability, cli); the shared helpers (``helpers``, ``plugin_site``) live here,
at the top, and are importable from every room."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
pytest.register_assert_rewrite("plugin_site", "helpers")

pytest_plugins = ["plugin_site"]  # the site / global_registry fixtures

#: Set to a folder to keep the JAX compilation cache of the test session there (and reuse it in
#: the next session: the inner loop then compiles only what changed). Unset: a temporary folder
#: for this session, shared by its xdist workers, removed at the end.
CACHE_ENV = "AUGJAX_TEST_CACHE_DIR"
#: The augjax cache folder (``AUGJAX_CACHE_DIR``) of the processes the tests start, in the
#: session's cache folder.
PROCESS_CACHE = "processes"
_OWN_CACHE: list[str] = []


def _session_cache_dir(config) -> str:
    given = os.environ.get(CACHE_ENV)
    if given:
        return given
    if not _OWN_CACHE:
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="augjax-test-jax-cache-"))
    return _OWN_CACHE[0]


def pytest_configure(config):
    """CPU profile (``AUGJAX_TEST_PROFILE``, tests/suite_profile.py) and one persistent JAX
    compilation cache for the session, shared by the xdist workers:
    the per-module clearing below drops compiled programs from memory, and without a disk cache
    every module (and every worker) compiled the same small programs again. Only JAX's
    configuration is set here (augjax's own cache switches are left alone)."""
    import suite_profile

    if os.environ.get(suite_profile.ENV):
        config.pluginmanager.register(suite_profile.Recorder(os.environ[suite_profile.ENV]),
                                      "augjax_suite_profile")
    workerinput = getattr(config, "workerinput", None)
    folder = workerinput["augjax_jax_cache"] if workerinput else _session_cache_dir(config)
    # augjax's program store stays on (the default configuration): its programs are kept
    # beside this session's JAX cache and shared by the tests. A test that counts traces turns
    # it off itself (the ``no_program_store`` fixture).
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # The processes the tests start (examples and docs run as a user runs them, augjax's CLI)
    # share one augjax cache folder of their own for the session instead of the user's
    # ~/.cache/augjax: nothing of the run goes to ~ and a program one process compiled is there
    # for the next, on every worker. A test about the cache gives its processes a folder of
    # their own (or none).
    if not os.environ.get("AUGJAX_CACHE_DIR"):
        os.environ["AUGJAX_CACHE_DIR"] = os.path.join(folder, PROCESS_CACHE)
    # Python's cyclic collector: tracing and lowering allocate many short-lived objects, and at
    # the default thresholds (700, 10, 10) the collector ran ~2,300 times in 70 CPU-s of tests,
    # scanning JAX's, torch's and DALI's objects again each time (5% of the tests' CPU). Fewer
    # young collections; _release_compiled_programs still collects everything after each module
    # (the memory mappings of dropped executables), and pytest_collection_finish freezes what
    # the imports and the collection made (never garbage) out of those full collections.
    gc.set_threshold(*GC_THRESHOLDS)


#: Collector thresholds of the test processes (benchmarks/results/2026-12-05-suite-time.md).
GC_THRESHOLDS = (100_000, 50, 10)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist: hand the controller's cache folder to each worker
    node.workerinput["augjax_jax_cache"] = _session_cache_dir(node.config)


def pytest_unconfigure(config):
    if getattr(config, "workerinput", None) is None and _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE.pop(), ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module: drop augjax's and JAX's compiled programs and the module's DALI
    pipelines. Every XLA CPU executable keeps memory mappings alive; over the ~1,700 tests they
    pass the kernel's vm.max_map_count (65,530) and the next compile aborts or segfaults
    (seen in CI at ~94% of the suite)."""
    yield
    import jax

    from augjax._runtime.padding import wait_compiles
    from augjax._runtime.program import (
        apply_program,
        array_program,
        sample_program,
        seeded_program,
    )
    from augjax.dali._bridge import dali_function
    from augjax.testing import _dali as kit_dali

    wait_compiles()  # a partial batch's own program compiling behind (padding's "recurring")
    with kit_dali._LOCK:
        kit_dali._CACHE.clear()
    for cache in (array_program, sample_program, apply_program, seeded_program, dali_function):
        cache.cache_clear()
    # One collection after JAX's caches are cleared frees as much as one before and one after
    # did (the same memory mappings left, measured) for one pass over the heap.
    jax.clear_caches()
    gc.collect()


@pytest.fixture(autouse=True)
def _unpadded_batches(monkeypatch):
    """Each batch size compiles its own program in the tests: many compare an op's output for
    a batch with its output for part of it, which padding (augjax._runtime.padding, on by default)
    would run through the same program. tests/runtime/test_padding.py turns padding back on."""
    monkeypatch.setenv("AUGJAX_PAD_BATCHES", "0")


#: Rooms whose tests build their programs in this process for this process alone: augjax's
#: program store (on by default: each new program exported to disk so that a later process
#: skips its trace) is off in them, as padding is above. Exporting every first program cost
#: 9-12% of their CPU (tests/targets, core, test_crop and test_mix: 467 -> 426 CPU-s; test_geometry
#: and test_tone 67 -> 61), and almost none ran again from the store. The store keeps its
#: default in the other rooms (docs, examples, CLI, DALI, clips, views: their processes share
#: programs), in the conformance kit (every op, as a pack author runs it) and in the modules
#: marked ``program_store`` (the store's own tests, and batch history, whose programs run again
#: after it drops them); output with the store on, off, cold and
#: warm is compared bitwise in tests/reliability/test_cache_invariance.py. Child processes
#: keep the default either way (the switch is this process's only).
STORE_OFF_ROOMS = ("tests/catalog/", "tests/compose/", "tests/targets/", "tests/core/",
                   "tests/reliability/", "tests/runtime/")
STORE_ON_MODULES = ("tests/catalog/test_all_ops.py",)


@pytest.fixture(autouse=True)
def _program_store_off_in_process(request, monkeypatch):
    nodeid = request.node.nodeid
    if (nodeid.startswith(STORE_OFF_ROOMS) and not nodeid.startswith(STORE_ON_MODULES)
            and request.node.get_closest_marker("program_store") is None):
        from augjax._runtime import program_store

        monkeypatch.setattr(program_store, "store_dir", lambda: None)


def _tpu_reason() -> str | None:
    try:
        import jax

        if any(d.platform == "tpu" for d in jax.devices()):
            return None
    except RuntimeError:
        pass
    return "needs a TPU (JAX sees none); run on a TPU machine with pytest -m tpu -p no:xdist"


def _gpu_reason() -> str | None:
    try:
        import jax

        if not any(d.platform == "gpu" for d in jax.devices()):
            return "needs a CUDA GPU (JAX sees none)"
    except RuntimeError:
        return "needs a CUDA GPU (JAX sees none)"
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return "needs NVIDIA DALI"
    return None


#: The fast tier leaves these out (``pytest -m "not slow"``); CI runs them. Each took over 20 s
#: (every parameter set together) in a full ``pytest -n 2 --durations=80`` run on a loaded 2-core
#: machine (2026-12-01); an entry with "[id]" marks that parameter set only. They are DALI-vs-
#: array parity pipelines, reference parity sweeps over many shapes, statistical draws and
#: subprocesses. The fast tier keeps each property through smaller
#: tests (the conformance kit runs DALI == arrays on every op). Tests marked ``slow`` in their
#: module (subprocess installs) are left out too.
SLOW = frozenset({
    "tests/compose/test_chain.py::test_cpu_chunks_of_compute_bound_ops_equal_the_whole_batch",
    "tests/catalog/test_color.py::test_color_jitter_op_matches_torchvision_with_its_draws",
    "tests/catalog/test_color.py::test_dali_pipeline_equals_array_path",
    "tests/catalog/test_color.py::test_jitter_forced_orders_match_torchvision",
    "tests/catalog/test_color.py::test_jitter_pallas_form_equals_the_xla_form_at_any_size",
    "tests/catalog/test_color.py::test_jitter_subsets_in_every_order_match_torchvision",
    "tests/reliability/test_concurrency.py::test_ops_first_called_from_many_threads_are_traced_once",  # noqa: E501
    "tests/reliability/test_concurrency.py::test_pipelines_in_threads_share_one_compiled_chain_and_stay_correct",  # noqa: E501
    "tests/catalog/test_contrib_ops.py::test_dali_cpu_pipeline_equals_the_array_path[gaussian_blur-uint8]",  # noqa: E501
    "tests/catalog/test_contrib_ops.py::test_dali_cpu_pipeline_equals_the_array_path[gaussian_blur-float32]",  # noqa: E501
    "tests/catalog/test_crop.py::test_dali_path_equals_array_path",
    "tests/catalog/test_crop.py::test_rrc_matches_torchvision_resized_crop",
    "tests/runtime/test_dispatch.py::test_dali_output_layouts_are_set",
    "tests/runtime/test_dispatch.py::test_dali_path_equals_array_path",
    "tests/runtime/test_dispatch.py::test_empty_batch_and_batch_of_one",
    # 2026-12-05 (CI profile): 12 CPU-s; the tier keeps the folded flip's nearest cases below
    "tests/runtime/test_ragged_flip.py::test_the_folded_flip_equals_each_image_alone",
    "tests/runtime/test_dispatch.py::test_key_forms_are_equivalent",
    "tests/catalog/test_erase.py::test_dali_pipeline_equals_array_path",
    "tests/catalog/test_erase.py::test_matches_timm_random_erasing_given_the_same_draws",
    "tests/catalog/test_erase.py::test_same_key_same_output_other_key_other_output_and_chw",
    "tests/catalog/test_geometry.py::test_dali_path_equals_array_path",
    "tests/reliability/test_hostile.py::test_a_batch_of_4096_and_a_1024_pixel_image",
    "tests/reliability/test_hostile.py::test_op_properties_over_shapes_dtypes_and_params[median_blur-uint8-HWC-N1]",  # noqa: E501
    "tests/reliability/test_hostile.py::test_out_of_range_floats_and_nan_pixels[color_jitter]",
    "tests/catalog/test_mix.py::test_alphas_that_float32_cannot_draw_are_refused",
    "tests/catalog/test_mix.py::test_dali_pipeline_equals_array_path",
    "tests/catalog/test_mix.py::test_draws_follow_the_beta_the_probabilities_and_timms_box_correction",  # noqa: E501
    "tests/catalog/test_mix.py::test_float_soft_labels_mix_by_lam",
    "tests/catalog/test_mix.py::test_loop_free_loggamma_follows_the_gamma_distribution",
    "tests/catalog/test_mix.py::test_loop_free_loggamma_handles_the_extreme_alphas",
    "tests/catalog/test_mix.py::test_matches_timm_mixup_given_the_same_draws",
    "tests/catalog/test_mix.py::test_op_runs_the_kernel_with_its_key",
    "tests/compose/test_policies.py::test_augmix_choices",
    "tests/compose/test_policies.py::test_augmix_mixing_matches_the_formula",
    "tests/compose/test_policies.py::test_auto_augment_choices",
    "tests/compose/test_policies.py::test_dali_equals_arrays_for_policies",
    "tests/compose/test_policies.py::test_outputs_are_the_chosen_ops",
    "tests/compose/test_policies.py::test_policies_are_per_sample_and_reproducible",
    "tests/compose/test_policies.py::test_rand_augment_timm_noise_probability_and_values",
    "tests/compose/test_policies.py::test_rand_augment_torchvision_choices",
    "tests/core/test_randomness.py::test_array_path_reproducible_from_key",
    "tests/core/test_randomness.py::test_same_seed_same_batches_bitwise_other_seed_differs",
    "tests/core/test_randomness.py::test_samples_get_independent_draws",
    "tests/reliability/test_reproducibility.py::test_another_process_gives_the_same_batches",
    "tests/reliability/test_reproducibility.py::test_the_pipeline_actually_augments",
    "tests/runtime/test_sharding.py::test_arrays_and_shardings_over_several_devices_are_detected",
    "tests/runtime/test_sharding.py::test_example_cpu_shards_match_one_pipeline_bitwise",
    "tests/runtime/test_sharding.py::test_jax_function_sharding_with_one_local_device",
    "tests/runtime/test_sharding.py::test_partitioned_programs_trace_without_the_pallas_kernel",
    "tests/dali/test_sources.py::test_parallel_workers_match_per_sample_form_bitwise",
    "tests/core/test_spec.py::test_remembered_binding_gives_the_uncached_bindings_batch",
    "tests/catalog/test_tone.py::test_dali_pipeline_equals_array_path",
    "tests/runtime/test_program_store.py::test_an_edited_kernel_file_or_another_parameter_traces_afresh",  # noqa: E501
    "tests/runtime/test_program_store.py::test_the_switch_turns_it_off",
    # 2026-12-02 (pytest -n 2 --durations=150, fast tier, load 15): multi-process and install
    # subprocesses, and the contrib DALI parity that the kit's DALI check repeats (gaussian_blur
    # keeps it in the fast tier, KIT_FAST_OPS).
    "tests/catalog/test_contrib_ops.py::test_dali_cpu_pipeline_equals_the_array_path",
    "tests/dali/test_multi_host.py::test_two_processes_match_one_process_bitwise",
    "tests/dali/test_multi_host.py::test_a_process_that_dies_stops_the_other_within_bounded_time",
    "tests/plugins/test_contrib_install.py::test_wheel_installs_lists_runs_in_dali_and_uninstalls",
    "tests/dali/test_user_pipeline.py::test_user_pipeline_runs_and_labels_are_soft",
    # 2026-12-02 (full suite with --junitxml, 2 workers, load 4-7; seconds under that load):
    # subprocesses and the costliest single checks whose property a cheaper test keeps in the
    # tier (colour jitter: its gradient through apply, sample/apply; shot noise: its kernel
    # tests; targets: the single ops, the chain and the errors; padding: the mixing chain and
    # DALI's partial batch).
    "tests/catalog/test_color.py::test_color_jitter_gradient_in_every_form",
    "tests/catalog/test_color.py::test_edited_fields_change_the_output_as_expected",
    "tests/catalog/test_color.py::test_importing_augjax_does_not_import_pallas",
    "tests/catalog/test_contrib_ops.py::test_shot_noise_matches_dali_statistics",
    "tests/examples/test_examples.py::test_scripts_run_as_a_user_runs_them",
    "tests/targets/test_properties.py::test_policies_carry_targets",
    "tests/targets/test_properties.py::test_trivial_augment_carries_masks",
    "tests/targets/test_properties.py::test_dali_chain_carries_targets_in_one_crossing",
    "tests/targets/test_properties.py::test_a_partial_batch_runs_padded_with_its_targets",
    "tests/runtime/test_padding.py::test_smaller_array_batch_does_not_retrace_and_matches_unpadded",
    "tests/targets/test_properties.py::test_a_box_encloses_its_mask_through_a_chain",
    "tests/catalog/test_erase.py::test_pixel_mode_is_standard_normal_once_normalised",
    "tests/targets/test_errors.py::test_augmix_with_geometric_ops_refuses_masks",
    "tests/core/test_params.py::test_invert_needs_the_input_size_when_the_size_changed_and_refuses_mixtures",  # noqa: E501
    # fresh processes (each imports JAX and DALI): test_compile_cache keeps two in the tier
    "tests/runtime/test_program_store.py::test_a_second_process_runs_the_stored_programs_without_tracing",  # noqa: E501
    "tests/runtime/test_compile_cache.py::test_augjax_cache_dir_moves_it",
    "tests/runtime/test_compile_cache.py::test_a_directory_the_user_configured_is_kept",
    # 2026-12-02 (full suite, pytest -n 2 --durations=0, load 4-6): the costliest fast-tier
    # checks whose property a cheaper test of their module keeps in the tier (segmentation:
    # masks stay aligned; alignment: the chain of sample ops, the mixing ops' labels and
    # test_chain's DALI chain; params: the chain's edit and replay, invert on shear and flip;
    # padding: the jax iterator's partial last batch).
    "tests/examples/test_examples.py::test_boxes_enclose_masks_and_visible_objects_keep_their_box",  # noqa: E501
    "tests/reliability/test_alignment.py::test_composites_and_a_policy_keep_samples_aligned",
    "tests/reliability/test_alignment.py::test_dali_chain_ending_in_a_mixing_op_keeps_images_and_labels_aligned",  # noqa: E501
    "tests/core/test_params.py::test_policy_params_replay_and_edit",
    "tests/core/test_params.py::test_invert_is_exact_for_flips_and_quarter_turns",
    "tests/runtime/test_padding.py::test_dali_external_source_smaller_batch_does_not_retrace",
    "tests/reliability/test_alignment.py::test_chain_starting_with_a_mixing_op_is_local_to_sample_and_partner",  # noqa: E501
    "tests/core/test_params.py::test_chain_matrix_is_the_product_of_its_steps",
    "tests/compose/test_policy_tools.py::test_images_first_in_a_dali_pipeline_and_positional_config",  # noqa: E501
    # 2026-12-04 (tests/suite_profile.py, CPU-s): the boundary pairs that put colour jitter or a
    # policy beside a boundary (4-7 CPU-s each; the other eight pairs keep the property), the
    # overflow fallback on the second policy (aa-imagenet keeps it).
    "tests/compose/test_boundaries.py::test_boundaries_change_no_value[rand_augment+flip]",
    "tests/compose/test_boundaries.py::test_boundaries_change_no_value[random_resized_crop+color_jitter]",  # noqa: E501
    "tests/compose/test_boundaries.py::test_boundaries_change_no_value[color_jitter+random_erasing]",  # noqa: E501
    "tests/compose/test_policy_compact.py::test_an_overflowing_batch_takes_the_whole_batch_path[ra-torchvision]",  # noqa: E501
})

#: Parametrized tests that the fast tier runs for some parameter sets only (CI runs them all):
#: test -> the ids it keeps. The sets kept are the cheaper ones that still take each path the
#: test distinguishes (both dtypes across the sets, each policy family and style mode, a
#: geometric and a size-changing op, ...); the ones left out repeat a path on a costlier op or
#: size (same 2026-12-02 measurements). An id that no longer exists is reported (a warning).
FAST_PARAMS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    # 2026-12-05 (CI profile, CPU-s): the folded flip's bilinear chains cost 8-11 each; the
    # nearest one (both flips, 1-4) keeps both dtypes and both axes in the tier.
    "tests/runtime/test_ragged_flip.py::test_the_folded_flip_keeps_the_chains_bits": (
        "rrc_nearest+both-uint8", "rrc_nearest+both-float32"),
    # 2026-12-04 (tests/suite_profile.py, CPU-seconds, full suite -n 2): the Pallas-interpreted
    # layer kernels (4-9 CPU-s a policy) on one policy per warp convention, the tie-breaking
    # shapes and quarter turns once each; the correlate kernel without its 41-tap case (18
    # CPU-s: the 15-tap one over 5-6 pixels keeps taps longer than the image in the tier).
    "tests/compose/test_layer_kernel.py::test_each_entry_through_the_kernels_is_the_op_alone": (
        "ra-torchvision", "aa-v0"),
    "tests/compose/test_layer_kernel.py::test_small_and_one_channel_images_through_the_kernels": (
        "no-inside", "one-channel"),
    "tests/compose/test_layer_kernel.py::test_pil_rotate_exact_paths_through_the_kernels": (
        "square",),
    "tests/compose/test_layer_kernel.py::test_a_mixed_batch_through_the_kernels_is_the_switch": (
        "aa-imagenet",),
    "tests/compose/test_layer_kernel.py::test_a_host_with_a_gpu_traces_both_forms_and_runs_the_cpu_one": (  # noqa: E501
        "ra-torchvision",),
    "tests/catalog/test_pallas_forms.py::test_the_correlate_kernels_interpreted_give_the_xla_sums": (  # noqa: E501
        "5-9-7-3", "15-6-5-1", "3-70-300-1"),
    # the interpreted sample and elastic kernels: each shape once, fill and interpolation
    # alternating (16 and 12 sets of about 0.7 CPU-s)
    "tests/catalog/test_pallas_forms.py::test_the_sample_kernel_interpreted_gives_the_xla_pixels": (  # noqa: E501
        "12-9-7-11-3-None-nearest", "33-40-33-40-3-fill1-bilinear",
        "10-12-10-12-1-None-bilinear", "9-9-8-8-5-fill1-nearest"),
    "tests/catalog/test_pallas_forms.py::test_the_elastic_kernel_interpreted_gives_the_xla_pixels": (  # noqa: E501
        "12-9-3-None-nearest", "33-40-3-fill1-bilinear", "10-12-1-None-bilinear",
        "10-12-1-fill1-nearest"),
    # compaction: each style once (torchvision uint8, timm float32) and the pack op's
    # nothing-to-compact case (12 sets of 4-7 CPU-s each)
    "tests/compose/test_policy_compact.py::test_compacted_layers_equal_the_whole_batch_layers": (
        "ra-torchvision-uint8", "ra-timm-float32", "ra-pack-op-uint8"),
    "tests/compose/test_policy_families.py::test_every_entry_equals_the_op_alone": (
        "families-ra-torchvision-uint8", "auto-ra-pack-op-uint8"),
    "tests/compose/test_policy_families.py::test_drawn_plans_equal_the_ops_alone": (
        "families-aa-imagenet-uint8", "auto-ra-pack-op-float32"),
    "tests/compose/test_policy_families.py::test_the_switch_reference_gives_the_same_uint8_pixels": (  # noqa: E501
        "ra-pack-op",),
    "tests/catalog/test_color.py::test_gradient_with_respect_to_float_images": (
        "brightness", "contrast", "saturation", "grayscale", "random_grayscale"),
    "tests/catalog/test_color.py::test_sample_then_apply_is_the_call_bitwise": (
        "brightness-uint8", "brightness-float32", "contrast-uint8", "saturation-float32",
        "hue-uint8", "hue-float32", "grayscale-uint8", "random_grayscale-float32"),
    "tests/catalog/test_references.py::test_pil_convention_matches_timm_uint8": (
        "nearest-17x23", "bilinear-31x45"),
    "tests/catalog/test_references.py::test_pil_convention_matches_pil_float32": ("nearest",),
    "tests/targets/test_properties.py::test_a_box_encloses_its_moved_mask": (
        "rotate", "shear_x", "flip", "random_crop", "center_crop"),
    "tests/targets/test_properties.py::test_keypoints_stay_on_their_pixel": (
        "op0", "op1", "op4"),
    "tests/targets/test_properties.py::test_mask_dtypes_ranks_and_fill": ("uint8-255", "bool-1"),
    "tests/catalog/test_kernels.py::test_resize_taps_are_the_nonzeros_of_resize_weights": (
        "10-40-bilinear-False", "9-20-nearest-True"),
    "tests/catalog/test_kernels.py::test_correlate1d_matches_scipy_mirror": ("3-11",),
    "tests/catalog/test_kernels.py::test_shot_noise_level_table_equals_the_per_value_loop": (
        "3.0",),
    "tests/catalog/test_kernels.py::test_median_filter_matches_scipy_nearest": (
        "uint8-1", "uint8-3", "float32-5"),
    "tests/catalog/test_kernels.py::test_box_sum_is_exact_in_integers": ("5-1",),
    "tests/catalog/test_mix.py::test_mode_structure_and_odd_batches": ("batch",),
    "tests/catalog/test_mix.py::test_mixing_programs_have_no_while_loop_on_gpu": (
        "mixup", "cutmix"),
    "tests/catalog/test_ragged_arrays.py::test_rrc_on_a_list_matches_torchvision_and_the_single_image_path": (  # noqa: E501
        "float32",),
    "tests/catalog/test_contrib_ops.py::test_gradients_through_apply_match_finite_differences": (
        "box_blur-None", "gaussian_noise-None", "sphere-params6", "elastic_transform-None"),
    "tests/catalog/test_contrib_ops.py::test_grid_mask_matches_dali": ("uint8",),
    "tests/catalog/test_contrib_ops.py::test_gaussian_blur_matches_torchvision_and_dali": ("uint8",),
    "tests/catalog/test_contrib_ops.py::test_water_and_sphere_match_dali": ("uint8",),
    "tests/catalog/test_tone.py::test_matches_torchvision": ("uint8",),
    "tests/catalog/test_crop.py::test_apply_is_differentiable_in_the_image": (
        "random_crop-params1",),
    "tests/catalog/test_erase.py::test_apply_is_differentiable_in_the_image": ("cutout-kw1",),
    "tests/catalog/test_geometry.py::test_one_fill_config_serves_both_dtypes": (
        "rotate-params0-nearest", "shear_y-params1-bilinear", "translate_x-params2-nearest",
        "affine-params4-bilinear"),
    "tests/core/test_params.py::test_invert_restores_the_interior": ("shear-flip",),
    "tests/runtime/test_sharding.py::test_per_sample_output_independent_of_device_count": ("2",),
    "tests/runtime/test_padding.py::test_mixing_chain_padded_matches_unpadded": ("6",),
    "tests/dali/test_multi_host.py::test_processes_with_different_configs_stop_at_start_up_naming_the_field": (  # noqa: E501
        "chain",),
    "tests/cli/test_cli.py::test_console_script_runs": ("args0",),
    # op x dtype grids: each op once, the dtypes alternating over the ops
    "tests/catalog/test_tone.py::test_sample_then_apply_is_the_call_bitwise": (
        "invert-uint8", "solarize-float32", "solarize_add-uint8", "posterize-float32",
        "equalize-uint8", "autocontrast-float32", "sharpness-uint8", "gamma-float32"),
    "tests/catalog/test_erase.py::test_sample_then_apply_is_the_call_bitwise": (
        "random_erasing-kw0-fields0-float32", "random_erasing-kw1-fields1-uint8",
        "random_erasing-kw2-fields2-float32", "cutout-kw3-fields3-uint8"),
    "tests/catalog/test_mix.py::test_sample_then_apply_is_the_call_bitwise": (
        "config0-elem-uint8", "config1-batch-float32", "config2-pair-uint8"),
    "tests/catalog/test_crop.py::test_sample_then_apply_is_the_call_bitwise": (
        "random_resized_crop-params0-uint8-HWC", "random_crop-params1-float32-CHW",
        "center_crop-params2-uint8-HWC"),
    "tests/catalog/test_color.py::test_apply_takes_exact_factors_per_sample": (
        "brightness-uint8", "contrast-float32", "saturation-uint8", "hue-float32"),
    "tests/catalog/test_color.py::test_single_adjustments_match_torchvision": (
        "brightness-uint8", "contrast-float32", "saturation-uint8", "hue-float32"),
    "tests/catalog/test_geometry.py::test_perspective_matches_torchvision_on_its_draws": (
        "nearest-uint8", "bilinear-float32"),
    "tests/catalog/test_geometry.py::test_affine_matches_torchvision_on_its_draws": (
        "nearest-uint8", "bilinear-float32"),
    "tests/catalog/test_crop.py::test_random_crop_is_a_window_of_torchvision_pad": (
        "uint8-constant-4-0.0", "float32-constant-padding1-fill1", "uint8-constant-1-0.6",
        "uint8-edge-padding3-0.0", "float32-reflect-3-0.0", "float32-symmetric-padding5-0.0"),
    # layouts and keys: the ops of each module in turn (every op keeps its reference tests)
    "tests/catalog/test_geometry.py::test_chw_equals_hwc_and_keys_reproduce": (
        "rotate-params0", "shear_x-params2", "translate_y-params5", "rot90-params7"),
    "tests/catalog/test_tone.py::test_chw_equals_hwc_and_keys_drive_the_draws": (
        "invert", "solarize_add", "equalize", "sharpness"),
    "tests/catalog/test_color.py::test_chw_equals_hwc_and_keys_drive_the_draws": (
        "brightness", "hue", "random_grayscale"),
    "tests/core/test_params.py::test_matrix_maps_a_pixel_where_the_op_moves_it": (
        "flip-{'p': 1.0}-{}", "rot90-{'k': 1}-{}", "rotate-{'degrees': 90.0}-{}",
        "shear_x-{'shear': 0.5}-{}", "translate_y-{'translate': -4.0, 'relative': False}-{}",
        "perspective-{'p': 1.0, 'distortion_scale': 0.5}-{}"),
    "tests/catalog/test_crop.py::test_rrc_box_matches_torchvision_make_params": (
        "24-32-scale0-ratio0-fallbacks0", "40-12-scale3-ratio3-fallbacks3"),
    # hostile draws on the KIT_FAST_OPS: each op in one variant, the variants alternating (both
    # dtypes, both layouts, a batch of one)
    "tests/reliability/test_hostile.py::test_op_properties_over_shapes_dtypes_and_params": (
        "rotate-uint8-HWC-N1", "equalize-float32-CHW", "brightness-uint8-HWC-N1",
        "random_resized_crop-float32-CHW", "cutout-uint8-HWC-N1", "normalize-float32-CHW",
        "gaussian_blur-uint8-HWC-N1", "gaussian_noise-float32-CHW"),
    "tests/reliability/test_hostile.py::test_mixing_op_properties_over_shapes_dtypes_and_params": (
        "mixup_cutmix-float32-CHW",),
}.items()}

#: Tests parametrized over every registered op (the id starts with the op's name): the fast tier
#: runs them on KIT_FAST_OPS (below); CI on every op.
OP_SWEEPS = frozenset({
    "tests/reliability/test_batch_history.py::test_op_output_does_not_depend_on_earlier_batch_sizes",  # noqa: E501
    "tests/targets/test_targets_all_ops.py::test_every_op_carries_masks_and_boxes_by_its_rule",
    "tests/reliability/test_hostile.py::test_op_properties_over_shapes_dtypes_and_params",
    "tests/reliability/test_alignment.py::test_sample_op_output_i_is_op_of_input_i",
    "tests/reliability/test_hostile.py::test_mixing_op_properties_over_shapes_dtypes_and_params",
    "tests/reliability/test_hostile.py::test_out_of_range_floats_and_nan_pixels",
    "tests/reliability/test_hostile.py::test_empty_batch_keeps_its_shape",
})


#: The conformance kit's heavy checks (each builds a DALI pipeline or compiles several programs
#: for the op: 1-3 s an op each on an idle 2-core machine, about half the fast tier's time over
#: 52 ops) run in the fast tier on the ops of KIT_FAST_OPS only, one per kind of kernel
#: (per-sample colour and tone, geometric, size-changing, dtype-changing, erasing, batch-level
#: with labels, the contrib pack's blur and noise; since 2026-12-02 rotate and cutout stand for
#: the warps and the erasing ops (affine and random_erasing cost twice as much: 20 and 19 s of
#: kit checks and per-op sweeps, against 9 and 12 s), and brightness for DALI's color_twist
#: too; color_jitter's four took 108 s under load:
#: its own tests cover its forms); CI runs them on every op. check_sample_apply is one of them
#: since 2026-12-02 (it compiles four programs an op: 49 s of the tier over the 52 ops): every
#: op's own module tests sample/apply against the call. Every op's own tests stay in the tier,
#: and so do the kit's cheap checks on every op. check_neutral_is_identity is a heavy check
#: since 2026-12-02 too (a program of its own an op: 13 s of the tier over the other ops), and
#: check_geometry since 2026-12-04 (a warp with targets an op: 22 CPU-s of the tier over the 16
#: geometric ops; rotate and random_resized_crop keep it in the tier). The two key checks since
#: 2026-12-05: in a profile of the fast tier alone the first of them compiled each op's program
#: cold (32.6 CPU-s over 49 ops, against 0.2 in the whole suite, where the heavy checks had
#: compiled it first; the second reuses the program); the tier runs them on the KIT_FAST_OPS.
KIT_HEAVY_CHECKS = frozenset({
    "check_dali_matches_array", "check_output_contract", "check_input_errors",
    "check_differentiable", "check_vmap_matches_loop", "check_jit_matches_eager",
    "check_sample_apply", "check_neutral_is_identity", "check_geometry",
    "check_same_key_reproduces", "check_different_keys_differ",
})
KIT_FAST_OPS = frozenset({
    "rotate", "equalize", "brightness", "random_resized_crop", "mixup_cutmix", "cutout",
    "normalize", "gaussian_blur", "gaussian_noise",
})
KIT_TEST = "tests/catalog/test_all_ops.py::test_op_conforms["


def _slow_kit_check(nodeid: str) -> bool:
    if not nodeid.startswith(KIT_TEST):
        return False
    op, _, check = nodeid[len(KIT_TEST):-1].rpartition("-check_")
    return f"check_{check}" in KIT_HEAVY_CHECKS and op not in KIT_FAST_OPS


def slow_by_hand(nodeid: str) -> bool:
    """Whether the lists above leave ``nodeid`` out of the fast tier."""
    base, _, param = nodeid.partition("[")
    param = param[:-1]
    return (nodeid in SLOW or base in SLOW or _slow_kit_check(nodeid)
            or (base in FAST_PARAMS and param not in FAST_PARAMS[base])
            or (base in OP_SWEEPS and param.split("-", 1)[0] not in KIT_FAST_OPS))


def _slow_in_the_fast_tier(nodeid: str) -> bool:
    """The lists above, then the budget cut of tests/fast_tier_cut.py (written from a CPU
    profile by ``python tests/suite_profile.py <profile> --cut``)."""
    import fast_tier_cut
    import suite_profile

    return slow_by_hand(nodeid) or suite_profile.left_out_by_cut(
        fast_tier_cut.ONE_PARAM, fast_tier_cut.LEFT_OUT, nodeid)


def _check_fast_params(items) -> None:
    """Warns about FAST_PARAMS and ONE_PARAM ids that none of the collected parameter sets has
    (a renamed parameter would otherwise drop the test from the fast tier unnoticed)."""
    import fast_tier_cut

    lists = {"tests/conftest.py FAST_PARAMS": FAST_PARAMS,
             "tests/fast_tier_cut.py ONE_PARAM": {b: frozenset({p}) for b, p in
                                                  fast_tier_cut.ONE_PARAM.items()}}
    collected: dict[str, set[str]] = {}
    for item in items:
        base, _, param = item.nodeid.partition("[")
        if base in FAST_PARAMS or base in fast_tier_cut.ONE_PARAM:
            collected.setdefault(base, set()).add(param[:-1])
    for base, params in collected.items():
        for name, kept in lists.items():
            missing = kept.get(base, frozenset()) - params
            if len(params) > 1 and missing:
                warnings.warn(f"{name}: {base} has no parameter set {sorted(missing)} "
                              f"(collected: {sorted(params)})", stacklevel=1)


def pytest_collection_modifyitems(config, items):
    import suite_profile

    for item in items:
        if item.get_closest_marker("slow") is not None:  # its module's own mark
            item.stash[suite_profile.MARKED] = True
        elif _slow_in_the_fast_tier(item.nodeid):
            item.add_marker(pytest.mark.slow)
    _check_fast_params(items)
    for mark, reason in (("gpu", _gpu_reason()), ("tpu", _tpu_reason())):
        if reason is None:
            continue
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if mark in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def fork_server():
    """This test process's fork server (tests/forkrun.py), for the session: the docs' programs
    and commands and the examples' scripts run in processes forked from it, each as ``python
    *argv`` would run with the environment a test gives (``server.run(argv, cwd, env=...)``),
    without paying NumPy's, JAX's, augjax's, DALI's and PyTorch's imports again. Its own
    environment: this one with the checkout first on the path (what it imports is the
    checkout's augjax)."""
    from forkrun import ForkServer

    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    with ForkServer({**os.environ, "PYTHONPATH": path}) as server:
        yield server
