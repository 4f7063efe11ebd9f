import { ROTATION_REASONS } from '@eso-mtls/core';
import type { TopLevelSpec } from 'vega-lite';
import type { TimelineModel } from './timeline-data.js';

/** Names of the chart's marks, as they appear in the Vega scenegraph (tests count items by them). */
export const MARK = {
  caPhase: 'ca_phase',
  caPhaseTick: 'ca_phase_tick',
  caPhaseLabel: 'ca_phase_label',
  certificate: 'certificate',
  lookahead: 'lookahead',
  rotation: 'rotation',
  aggregated: 'aggregated_rotations',
  minRemaining: 'min_remaining',
  minRemainingLabel: 'min_remaining_label',
  violation: 'violation',
  violationPoint: 'violation_point',
} as const;

const WIDTH = 1100;
const ROW_HEIGHT = 16;
const VIOLATION_RED = '#d62728';
// Reasons share one palette across the chart; red is kept for violations.
const REASON_COLOURS = ['#ff7f0e', '#8c564b', '#9467bd', '#1f77b4', '#e377c2', '#17becf', '#2ca02c', '#7f7f7f'];
const PHASE_COLOURS = { prepare: '#9e9ac8', active: '#3182bd', retired: '#636363' };

/** The Vega-Lite spec of a rotation timeline: a row per CA and per leaf Secret over time. Pure. */
export function timelineSpec(model: TimelineModel): TopLevelSpec {
  const nominal = 'nominal' as const;
  const y = { field: 'row', type: nominal, title: null, scale: { domain: [...model.rows] }, axis: { labelLimit: 260 } };
  const lane = { field: 'lane', type: nominal, scale: { domain: [0, 1] }, legend: null };
  const x = { field: 'from', type: 'temporal' as const, title: null, scale: { type: 'utc' as const } };
  // The layers share the time scale; its bounds are the run, given once (as domain, Vega-Lite warns of two copies to merge).
  const runX = { ...x, scale: { ...x.scale, domainMin: model.start, domainMax: model.end } };
  const phaseColour = { field: 'phase', type: nominal, title: 'CA phase', scale: { domain: Object.keys(PHASE_COLOURS), range: Object.values(PHASE_COLOURS) } };
  const reasonColour = { field: 'reason', type: nominal, title: 'rotation reason', scale: { domain: [...ROTATION_REASONS], range: REASON_COLOURS } };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: model.title, subtitle: [...model.subtitle], anchor: 'start', subtitleFontSize: 11 },
    width: WIDTH,
    height: model.rows.length * ROW_HEIGHT,
    background: 'white',
    config: { axis: { labelFontSize: 10 }, legend: { orient: 'bottom', direction: 'horizontal', columns: 8, titleLimit: 300 } },
    datasets: {
      caPhases: [...model.caPhases],
      caPhaseLabels: [...model.caPhaseLabels],
      certificates: [...model.certificates],
      lookahead: [...model.lookahead],
      rotations: [...model.rotations],
      aggregated: [...model.aggregated],
      minRemaining: model.minRemaining ? [model.minRemaining] : [],
      violations: [...model.violations],
    },
    resolve: { scale: { color: 'independent', size: 'independent' }, legend: { color: 'independent' } },
    layer: [
      {
        data: { name: 'caPhases' },
        name: MARK.caPhase,
        mark: { type: 'bar', clip: true, height: { band: 0.8 } },
        encoding: {
          x: runX,
          x2: { field: 'to' },
          y,
          color: phaseColour,
        },
      },
      {
        data: { name: 'caPhaseLabels' },
        name: MARK.caPhaseTick,
        mark: { type: 'tick', clip: true, thickness: 3, bandSize: 14 },
        encoding: { x: { ...x, field: 'at' }, y, color: { ...phaseColour, legend: null } },
      },
      {
        data: { name: 'caPhaseLabels' },
        name: MARK.caPhaseLabel,
        mark: { type: 'text', align: 'left', dx: 4, fontSize: 9 },
        encoding: { x: { ...x, field: 'at' }, y, text: { field: 'label' } },
      },
      {
        data: { name: 'certificates' },
        name: MARK.certificate,
        mark: { type: 'bar', clip: true, color: '#9ecae1', opacity: 0.7, height: { band: 0.45 } },
        encoding: { x, x2: { field: 'to' }, y, yOffset: lane },
      },
      {
        data: { name: 'lookahead' },
        name: MARK.lookahead,
        mark: { type: 'bar', clip: true, color: '#08519c', opacity: 0.45, height: { band: 0.45 } },
        encoding: { x, x2: { field: 'to' }, y, yOffset: lane },
      },
      {
        data: { name: 'rotations' },
        name: MARK.rotation,
        mark: { type: 'point', clip: true, shape: 'diamond', filled: true, size: 36, opacity: 1 },
        encoding: { x: { ...x, field: 'at' }, y, yOffset: lane, color: reasonColour },
      },
      {
        data: { name: 'aggregated' },
        name: MARK.aggregated,
        mark: { type: 'circle', clip: true, opacity: 0.8 },
        encoding: {
          x: { ...x, field: 'at' },
          y,
          color: { ...reasonColour, legend: null },
          size: {
            field: 'count',
            type: 'quantitative',
            title: 'rotations, aggregated row',
            scale: { range: [10, 300] },
            ...(model.aggregatedRows === 0 ? { legend: null } : {}),
          },
        },
      },
      {
        data: { name: 'minRemaining' },
        name: MARK.minRemaining,
        mark: { type: 'rule', clip: true, color: 'black', strokeWidth: 3 },
        encoding: { x, x2: { field: 'to' }, y },
      },
      {
        data: { name: 'minRemaining' },
        name: MARK.minRemainingLabel,
        mark: { type: 'text', align: 'left', dx: 4, dy: -7, fontSize: 10, fontWeight: 'bold' },
        encoding: { x: { ...x, field: 'to' }, y, text: { field: 'label' } },
      },
      {
        data: { name: 'violations' },
        name: MARK.violation,
        mark: { type: 'rule', clip: true, color: VIOLATION_RED, strokeWidth: 1.5 },
        encoding: { x: { ...x, field: 'at' } },
      },
      {
        data: { name: 'violations' },
        transform: [{ filter: 'isValid(datum.row)' }],
        name: MARK.violationPoint,
        mark: { type: 'point', clip: true, shape: 'cross', filled: true, size: 120, color: VIOLATION_RED },
        encoding: { x: { ...x, field: 'at' }, y },
      },
    ],
  };
}
