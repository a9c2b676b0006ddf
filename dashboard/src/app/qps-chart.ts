/** The only module that touches uPlot: a QPS-over-time chart with the rule threshold drawn in. */
import uPlot from 'uplot';

export class QpsChart {
  readonly #plot: uPlot;
  readonly #host: HTMLElement;

  constructor(host: HTMLElement) {
    this.#host = host;
    const opts: uPlot.Options = {
      width: Math.max(300, host.clientWidth),
      height: 260,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        // a tick every ~90 px: second-level labels crowd the axis on short histories
        { stroke: '#9aa4b2', grid: { stroke: '#2a2f3a' }, ticks: { stroke: '#2a2f3a' }, space: 90 },
        { stroke: '#9aa4b2', grid: { stroke: '#2a2f3a' }, ticks: { stroke: '#2a2f3a' }, size: 60 },
      ],
      series: [
        {},
        { label: 'QPS', stroke: '#ff7a45', width: 2, fill: 'rgba(255,122,69,0.12)' },
        { label: 'threshold / s', stroke: 'rgba(255,200,80,0.7)', dash: [6, 4], width: 1 },
      ],
      legend: { live: true },
    };
    this.#plot = new uPlot(opts, [[], [], []], host);
  }

  /** @param times ms since epoch, oldest first; `qps` the same length */
  update(times: readonly number[], qps: readonly number[], thresholdPerSecond: number): void {
    const width = Math.max(300, this.#host.clientWidth);
    if (width !== this.#plot.width) this.#plot.setSize({ width, height: 260 });
    this.#plot.setData([times.map((t) => t / 1000), [...qps], times.map(() => thresholdPerSecond)]);
  }

  destroy(): void {
    this.#plot.destroy();
  }
}
