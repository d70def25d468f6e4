/**
 * A dashboard chart drawn as SVG on the server: bars scaled to the largest value, a few gridlines,
 * a label every few days. No script and no chart library; the figures are also in a table for
 * screen readers and for anyone who would rather read them.
 */
import type { ConsoleChart } from '../../core/console.ts';
import { formatMoney } from '../../core/format.ts';

const WIDTH = 720;
const HEIGHT = 220;
const LEFT = 64;
const BOTTOM = 24;
const TOP = 8;

export interface DrawnChart {
  id: string;
  heading: string;
  summary: string;
  width: number;
  height: number;
  bars: { x: number; y: number; w: number; h: number; title: string }[];
  grid: { y: number; label: string }[];
  ticks: { x: number; label: string }[];
  baseline: { x1: number; x2: number; y: number };
  rows: { label: string; value: string }[];
}

/** "12, 125 000": a bound a reader takes in at a glance (1, 2 or 5 times a power of ten). */
function roundUp(n: number): number {
  if (n <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  return [1, 2, 5, 10].map((m) => m * power).find((b) => b >= n)!;
}

export function drawChart(chart: ConsoleChart, index: number): DrawnChart {
  const show = (v: number) => (chart.money ? formatMoney(v) : String(v));
  // An empty chart still reads as an axis of whole units (0.00, 0.50, 1.00 or 0, 1, 2), not 0.01/0.01/0.00.
  const top = roundUp(Math.max(chart.money ? 100 : 2, ...chart.values));
  const plotH = HEIGHT - TOP - BOTTOM;
  const slot = (WIDTH - LEFT) / Math.max(1, chart.values.length);
  const y = (v: number) => TOP + plotH - (v / top) * plotH;
  const total = chart.values.reduce((a, b) => a + b, 0);
  const best = chart.values.indexOf(Math.max(...chart.values));
  const every = Math.max(1, Math.ceil(chart.values.length / 6));
  return {
    id: `chart-${index}`,
    heading: chart.heading,
    summary: `${chart.values.length} days, ${show(total)} in all${total > 0 ? `; the most on ${chart.labels[best]} (${show(chart.values[best]!)})` : ''}.`,
    width: WIDTH,
    height: HEIGHT,
    bars: chart.values.map((v, i) => ({
      x: Math.round((LEFT + i * slot + slot * 0.15) * 10) / 10,
      y: Math.round(y(v) * 10) / 10,
      w: Math.round(slot * 0.7 * 10) / 10,
      h: Math.round((TOP + plotH - y(v)) * 10) / 10,
      title: `${chart.labels[i]}: ${show(v)}`,
    })),
    grid: [0, 0.5, 1].map((f) => ({ y: Math.round(y(top * f) * 10) / 10, label: chart.money ? show(Math.round(top * f)) : String(top * f) })),
    ticks: chart.labels.flatMap((label, i) => (i % every === 0 ? [{ x: Math.round((LEFT + i * slot + slot / 2) * 10) / 10, label: label.slice(5) }] : [])),
    baseline: { x1: LEFT, x2: WIDTH, y: TOP + plotH },
    rows: chart.labels.map((label, i) => ({ label, value: show(chart.values[i]!) })),
  };
}
