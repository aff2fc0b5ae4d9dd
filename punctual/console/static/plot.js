// A uPlot chart as a Preact component. uPlot (vendor/uPlot.iife.min.js) is a classic script: window.uPlot.
import { useEffect, useRef } from "preact/hooks";
import { html, localTime } from "./lib.js";

const COLORS = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df"];

/**
 * `data` is uPlot's: [xs (unix seconds), ys1, ys2, ...]; `series` names each y. `label` describes the
 * chart to a screen reader (the figures are in the tables beside it).
 */
export function Plot({ data, series, label, height = 180, units = "" }) {
  const box = useRef(null);
  const chart = useRef(null);

  useEffect(() => {
    const width = () => Math.max(240, (box.current && box.current.clientWidth) || 600);
    chart.current = new window.uPlot(
      {
        width: width(),
        height,
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [
          {},
          { values: (_u, ticks) => ticks.map((tick) => `${tick}${units}`), size: 60 },
        ],
        series: [
          { value: (_u, ts) => (ts === null ? "–" : localTime(new Date(ts * 1000).toISOString())) },
          ...series.map((name, i) => ({ label: name, stroke: COLORS[i % COLORS.length], width: 2,
            points: { show: true, size: 5 } })),
        ],
      },
      data,
      box.current,
    );
    const observer = new ResizeObserver(() => chart.current && chart.current.setSize({ width: width(), height }));
    observer.observe(box.current);
    return () => {
      observer.disconnect();
      chart.current.destroy();
      chart.current = null;
    };
  }, [series.join("|"), height]);

  useEffect(() => {
    if (chart.current) chart.current.setData(data);
  }, [data]);

  return html`<figure class="plot" role="img" aria-label=${label}><div ref=${box}></div></figure>`;
}
